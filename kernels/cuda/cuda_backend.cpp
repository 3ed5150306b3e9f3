// The CUDA backend: a validated host Case goes to the device (inputs as raw bytes in their own
// dtype; masks of any integer/bool dtype and tvd_prob's labels converted on the host to 0/1
// bytes), one launch sequence of device_api.hpp computes the loss and the wanted gradients
// (rounded into the input dtype on the device), and the results come back. Each run uses its
// own stream and buffers, so concurrent runs from several threads are independent.
// fused_linear_masked_kl_divergence and masked_unbiased_dcor are not implemented here yet:
// supports() is false for them and run() throws Unavailable.
#include "kernels/cuda/cuda_backend.hpp"

#include <string>
#include <vector>

#include "core/errors.hpp"
#include "kernels/cuda/case_args.hpp"
#include "kernels/cuda/device_api.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace divcheck::cuda {

namespace {

DeviceBuffer upload_bytes(const void* host, std::size_t bytes, const std::string& what, const Stream& s) {
  DeviceBuffer d(bytes, what);
  if (bytes != 0)
    cuda_check(cudaMemcpyAsync(d.get(), host, bytes, cudaMemcpyHostToDevice, s.get()),
               "cudaMemcpyAsync(" + what + " to device)");
  return d;
}

DeviceBuffer upload(const Tensor& t, const std::string& what, const Stream& s) {
  return upload_bytes(t.data(), t.nbytes(), what, s);
}

void download(Tensor& t, const DeviceBuffer& d, const std::string& what, const Stream& s) {
  if (t.nbytes() == 0) return;
  cuda_check(cudaMemcpyAsync(t.data(), d.get(), t.nbytes(), cudaMemcpyDeviceToHost, s.get()),
             "cudaMemcpyAsync(" + what + " to host)");
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& o) : options_(o) {}
  std::string_view name() const override { return "cuda"; }
  bool supports(DivergenceId id) const override { return cuda_supports(id); }
  Outputs run(const Case& c) const override {
    if (!cuda_supports(c.id))
      throw Unavailable("cuda backend: " + std::string(name_of(c.id)) +
                        " is not implemented on the GPU yet (issue 3 covers the other ten rows)");
    return c.id == DivergenceId::tvd_prob ? run_tvd_prob(c) : run_logit(c);
  }

 private:
  Outputs run_logit(const Case& c) const;
  Outputs run_tvd_prob(const Case& c) const;
  CudaOptions options_;
};

Outputs CudaBackend::run_logit(const Case& c) const {
  const LogitRoles roles = logit_roles(c);
  const Tensor& y = *roles.p;
  const Tensor& x = *roles.q;
  const bool want_p = c.wants(roles.p_name), want_q = c.wants(roles.q_name);
  const Shape ls = loss_shape(c);
  LogitArgs a = logit_args_of(c, options_);

  Stream s;
  DeviceBuffer dy = upload(y, roles.p_name, s), dx = upload(x, roles.q_name, s);
  std::vector<std::uint8_t> valid_h, support_h;
  DeviceBuffer dvalid, dsupport, dgo, dgp, dgq;
  if (roles.mask) {
    valid_h = nonzero_flags(*roles.mask);
    dvalid = upload_bytes(valid_h.data(), valid_h.size(), "position mask", s);
  }
  if (roles.support) {
    support_h = nonzero_flags(*roles.support);
    dsupport = upload_bytes(support_h.data(), support_h.size(), "support_mask", s);
  }
  if (want_p || want_q) dgo = upload(c.grad_output, "grad_output", s);
  if (want_p) dgp = DeviceBuffer(y.nbytes(), "grad " + roles.p_name);
  if (want_q) dgq = DeviceBuffer(x.nbytes(), "grad " + roles.q_name);
  DeviceBuffer dloss(static_cast<std::size_t>(shape_numel(ls)) * sizeof(float), "loss");
  DeviceBuffer dwork(logit_workspace_bytes(a.batch, a.seq), "workspace");

  a.p_logits = dy.get();
  a.q_logits = dx.get();
  a.valid = dvalid.as<std::uint8_t>();
  a.support = dsupport.as<std::uint8_t>();
  a.grad_output = dgo.as<float>();
  a.grad_p = dgp.get();
  a.grad_q = dgq.get();
  a.loss = dloss.as<float>();
  a.workspace = dwork.get();
  // The diagnostics counters (tests: LogitArgs::counters).
  const bool counted = options_.tame_rows_out || options_.prefetched_rows_out;
  constexpr std::size_t kCounterBytes = kDiagnosticsCounters * sizeof(unsigned long long);
  DeviceBuffer dcount;
  if (counted) {
    dcount = DeviceBuffer(kCounterBytes, "diagnostics counters");
    cuda_check(cudaMemsetAsync(dcount.get(), 0, kCounterBytes, s.get()), "cudaMemsetAsync(counters)");
    a.counters = static_cast<unsigned long long*>(dcount.get());
  }
  launch_logit_divergence(a, s.get());

  Outputs out;
  out.loss = Tensor(DType::f32, ls);
  download(out.loss, dloss, "loss", s);
  if (want_p) {
    Tensor g(y.dtype(), y.shape());
    download(g, dgp, "grad " + roles.p_name, s);
    out.grads.emplace(roles.p_name, std::move(g));
  }
  if (want_q) {
    Tensor g(x.dtype(), x.shape());
    download(g, dgq, "grad " + roles.q_name, s);
    out.grads.emplace(roles.q_name, std::move(g));
  }
  s.sync("running " + std::string(name_of(c.id)));
  if (counted) {
    unsigned long long n[kDiagnosticsCounters] = {};
    cuda_check(cudaMemcpy(n, dcount.get(), sizeof n, cudaMemcpyDeviceToHost), "cudaMemcpy(counters)");
    if (options_.tame_rows_out) *options_.tame_rows_out = static_cast<std::int64_t>(n[kTameRowsCounter]);
    if (options_.prefetched_rows_out)
      *options_.prefetched_rows_out = static_cast<std::int64_t>(n[kPrefetchedRowsCounter]);
  }
  return out;
}

Outputs CudaBackend::run_tvd_prob(const Case& c) const {
  const Tensor& p = *c.input("p");
  const Tensor& q = *c.input("q");
  const bool want_p = c.wants("p");
  const Shape ls = loss_shape(c);
  TvdProbArgs a = tvd_args_of(c);

  Stream s;
  DeviceBuffer dp = upload(p, "p", s), dq = upload(q, "q", s);
  const std::vector<std::uint8_t> valid_h = tvd_valid_flags(c);
  DeviceBuffer dvalid, dgo, dgp;
  if (!valid_h.empty()) dvalid = upload_bytes(valid_h.data(), valid_h.size(), "labels", s);
  if (want_p) {
    dgo = upload(c.grad_output, "grad_output", s);
    dgp = DeviceBuffer(p.nbytes(), "grad p");
  }
  DeviceBuffer dloss(static_cast<std::size_t>(shape_numel(ls)) * sizeof(float), "loss");
  DeviceBuffer dwork(tvd_prob_workspace_bytes(a.rows), "workspace");

  a.p = dp.get();
  a.q = dq.get();
  a.valid = dvalid.as<std::uint8_t>();
  a.grad_output = dgo.as<float>();
  a.grad_p = dgp.get();
  a.loss = dloss.as<float>();
  a.workspace = dwork.get();
  launch_tvd_prob(a, s.get());

  Outputs out;
  out.loss = Tensor(DType::f32, ls);
  download(out.loss, dloss, "loss", s);
  if (want_p) {
    Tensor g(p.dtype(), p.shape());
    download(g, dgp, "grad p", s);
    out.grads.emplace("p", std::move(g));
  }
  s.sync("running tvd_prob");
  return out;
}

}  // namespace

LogitPlan plan_for_case(const Case& c, const CudaOptions& options) {
  if (!cuda_supports(c.id) || c.id == DivergenceId::tvd_prob)
    throw InvalidArgument("case.id", std::string(name_of(c.id)), "not a logit row of the cuda backend");
  validate_case(c);
  LogitArgs a = logit_args_of(c, options);
  static std::uint8_t present = 1;  // planning reads only whether a support mask exists and
  if (logit_roles(c).support) a.support = &present;  // whether gradients are wanted
  if (!c.wants_grad.empty()) a.grad_p = &present;
  return plan_logit_divergence(a);
}

std::unique_ptr<Backend> make_cuda_backend_with(const CudaOptions& options) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    throw Unavailable(std::string("cuda backend: no CUDA device visible (cudaGetDeviceCount: ") +
                      cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")");
  if (count < 1) throw Unavailable("cuda backend: no CUDA device visible (cudaGetDeviceCount: 0 devices)");
  return std::make_unique<CudaBackend>(options);
}

}  // namespace divcheck::cuda
