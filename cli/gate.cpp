// The gate: plan the case stream, run it on J workers (results collected by index, so they do
// not depend on J), shrink and save failures, then write the reports.
#include "cli/gate.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/case_check.hpp"
#include "cli/environment.hpp"
#include "cli/rapidcheck_lock.hpp"
#include "cli/verdict_records.hpp"
#include "core/case_file.hpp"
#include "core/version.hpp"
#include "properties/generators.hpp"
#include "reports/atomic_file.hpp"
#include "reports/junit_xml.hpp"
#include "reports/markdown_report.hpp"
#include "reports/report_json.hpp"
#include "reports/summary_table.hpp"
#include "reports/text_util.hpp"

namespace divcheck::gate {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// One planned case of the stream.
struct WorkItem {
  std::size_t div;  // index into the selected divergences
  std::int64_t k;
  std::string family;
  std::uint64_t seed;
  int size;
};

// What running one item produced. Only failures keep their case and shrinkable.
struct ItemResult {
  bool ran = false;
  report::CaseRecord record;
  std::optional<rc::Shrinkable<Case>> shrinkable;
  std::optional<Case> drawn;
  CaseCheck check;
};

struct DivergencePlan {
  DivergenceId id;
  std::string name;
  std::int64_t planned = 0;
};

std::vector<DivergenceId> selected_divergences(const GateOptions& o) {
  std::vector<DivergenceId> ids;
  for (const auto& row : registry())
    if (o.divergences.empty() || std::find(o.divergences.begin(), o.divergences.end(), row.id) != o.divergences.end())
      ids.push_back(row.id);
  return ids;
}

bool family_selected(const GateOptions& o, std::string_view family) {
  return o.families.empty() || std::find(o.families.begin(), o.families.end(), family) != o.families.end();
}

// Progress on stderr: failing cases (every case with --verbose) as they finish, a line when a
// divergence completes, and from the monitoring thread a line for the whole run (every 10 s when
// something changed, every 30 s as a heartbeat during long cases, with the cases that hold a
// worker for 10 s or more).
class Progress {
 public:
  Progress(std::ostream& err, const std::vector<DivergencePlan>& plans, Clock::time_point t0, bool verbose)
      : err_(err), plans_(plans), done_(plans.size(), 0), failed_(plans.size(), 0), t0_(t0), last_line_(t0),
        verbose_(verbose) {}

  void started(const WorkItem& item) {
    std::lock_guard<std::mutex> lock(mu_);
    running_[&item] = Clock::now();
  }

  void finished(const WorkItem& item, const ItemResult& r) {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(&item);
    ++done_[item.div];
    ++total_done_;
    if (!r.record.passed) ++failed_[item.div];
    if (verbose_ || !r.record.passed)
      err_ << "[" << plans_[item.div].name << "] case " << item.k << " (" << item.family << ", " << r.record.dtype
           << ", size " << item.size << "): " << r.check.summary() << "\n";
    if (done_[item.div] == plans_[item.div].planned) status_line(item.div);
    err_.flush();
  }

  // The cases run k-major, so every divergence is in progress at once: one line for the run,
  // with the failures by divergence, if any.
  void tick() {
    std::lock_guard<std::mutex> lock(mu_);
    const double quiet = seconds_since(last_line_);
    if (quiet < 10.0 || (total_done_ == total_at_last_tick_ && quiet < 30.0)) return;
    total_at_last_tick_ = total_done_;
    total_line();
    for (const auto& [item, since] : running_)  // name the cases that hold a worker for long
      if (seconds_since(since) >= 10.0)
        err_ << "  still running: [" << plans_[item->div].name << "] case " << item->k << " (" << item->family
             << ", size " << item->size << ") for " << report::format_seconds(seconds_since(since)) << "\n";
    err_.flush();
  }

  void line(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    err_ << s << "\n";
    err_.flush();
  }

 private:
  void total_line() {
    last_line_ = Clock::now();
    std::int64_t planned = 0, failed = 0;
    std::string by_divergence;
    for (std::size_t d = 0; d < plans_.size(); ++d) {
      planned += plans_[d].planned;
      failed += failed_[d];
      if (failed_[d] > 0)
        by_divergence += (by_divergence.empty() ? "" : ", ") + plans_[d].name + " " + std::to_string(failed_[d]);
    }
    err_ << "[all] " << total_done_ << "/" << planned << " cases, " << failed << " failures"
         << (by_divergence.empty() ? "" : " (" + by_divergence + ")") << ", "
         << report::format_seconds(seconds_since(t0_)) << "\n";
  }

  void status_line(std::size_t d) {
    last_line_ = Clock::now();
    err_ << "[" << plans_[d].name << "] " << done_[d] << "/" << plans_[d].planned << " cases, " << failed_[d]
         << " failures, " << report::format_seconds(seconds_since(t0_)) << "\n";
  }

  std::mutex mu_;
  std::ostream& err_;
  const std::vector<DivergencePlan>& plans_;
  std::vector<std::int64_t> done_, failed_;
  std::int64_t total_done_ = 0, total_at_last_tick_ = 0;
  std::map<const WorkItem*, Clock::time_point> running_;
  Clock::time_point t0_, last_line_;
  bool verbose_;
};

ItemResult run_item(const WorkItem& item, DivergenceId id, const Backend& backend) {
  ItemResult r;
  r.ran = true;
  r.record.k = item.k;
  r.record.family = item.family;
  r.record.seed = item.seed;
  r.record.size = item.size;
  r.record.dtype = "?";
  const auto t0 = Clock::now();
  try {
    std::unique_lock<std::mutex> rc_lock(rapidcheck_mutex());
    rc::Shrinkable<Case> s = draw_case(id, item.family, item.seed, item.size);
    Case c = s.value();
    rc_lock.unlock();
    r.record.dtype = case_dtype(c);
    r.record.gradients = c.wants_grad;
    r.check = check_case(backend, c);
    // Keep the verdict, drop the (possibly large) tensors: a failure is re-run when it is shrunk.
    r.check.outputs.reset();
    r.check.expected.reset();
    if (!r.check.pass()) {
      r.shrinkable = std::move(s);
      r.drawn = std::move(c);
    }
  } catch (const std::exception& e) {
    r.check = CaseCheck{};
    r.check.error = std::string("generator threw: ") + e.what();
  } catch (...) {
    r.check = CaseCheck{};
    r.check.error = "generator threw: unknown exception";
  }
  r.record.passed = r.check.pass();
  r.record.worst_ratio = r.check.worst_ratio();
  r.record.seconds = seconds_since(t0);
  return r;
}

// Runs fn(i) for i in [0, n) on `jobs` worker threads (claiming indices in order) until fn
// returns false; meanwhile the calling thread calls tick() about every 2 s.
template <class Fn, class Tick>
void parallel_for(std::size_t n, int jobs, Fn fn, Tick tick) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  int running = std::max(1, std::min<int>(jobs, static_cast<int>(std::max<std::size_t>(n, 1))));
  std::exception_ptr error;  // the first exception of any worker, rethrown after the join
  auto worker = [&] {
    try {
      while (!stop.load()) {
        const std::size_t i = next.fetch_add(1);
        if (i >= n) break;
        if (!fn(i)) stop.store(true);
      }
    } catch (...) {
      stop.store(true);
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    --running;
    cv.notify_all();
  };
  std::vector<std::thread> pool;
  for (int t = running; t > 0; --t) pool.emplace_back(worker);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::seconds(2), [&] { return running == 0; })) {
      lock.unlock();
      tick();
      lock.lock();
    }
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

std::string regenerate_command(const GateOptions& o, std::string_view divergence, std::int64_t k) {
  return report::shell_join({o.program, "check", "--backend", o.backend_arg, "--divergence", std::string(divergence),
                             "--seed", std::to_string(o.seed), "--only-case", std::to_string(k)});
}

// Shrinks (when asked), saves, and describes one failing item.
report::FailureRecord make_failure(const GateOptions& o, const DivergencePlan& plan, ItemResult& r, bool shrink,
                                   const Backend& backend) {
  report::FailureRecord f;
  f.k = r.record.k;
  f.family = r.record.family;
  f.seed = r.record.seed;
  f.size = r.record.size;
  f.dtype = r.record.dtype;
  f.regenerate = regenerate_command(o, plan.name, f.k);
  f.summary = r.check.summary();
  f.error = r.check.error;
  f.shrink_stop = "not attempted";
  if (!r.drawn) {  // the generator itself failed: nothing to save
    f.shrink_stop = "no case (generator failed)";
    return f;
  }
  Case minimal = *r.drawn;
  CaseCheck final_check = r.check;
  if (shrink && r.shrinkable) {
    ShrinkResult s = shrink_failing(
        *r.shrinkable, [&](const Case& c) { return !check_case(backend, c).pass(); }, o.shrink);
    f.shrunk = true;
    f.shrink_steps = s.steps;
    f.shrink_attempts = s.attempts;
    f.shrink_stop = s.stopped_by;
    if (s.steps > 0) {
      minimal = std::move(s.minimal);
      final_check = check_case(backend, minimal);
    }
  } else if (!shrink) {
    f.shrink_stop = "not attempted (beyond --shrink-cases)";
  }
  std::ostringstream note;
  note << "divcheck check: case " << f.k << " of " << plan.name << ", run seed " << o.seed;
  if (f.shrink_steps > 0) note << ", shrunk in " << f.shrink_steps << " steps";
  minimal.provenance.note = note.str();
  if (final_check.error.empty() && final_check.verdict) f.tensors = tensor_records(minimal, *final_check.verdict);
  f.summary = final_check.summary();
  f.error = final_check.error;
  const std::string path =
      (std::filesystem::path(o.out_dir) / "failures" / failure_file_name(plan.name, f.family, f.k)).string();
  try {
    report::write_file_atomically(path, encode_case(minimal));
    f.case_file = path;
    f.repro = report::shell_join({o.program, "repro", path, "--backend", o.backend_arg});
  } catch (const std::exception& e) {
    f.summary += std::string(" (case file not saved: ") + e.what() + ")";
  }
  return f;
}

}  // namespace

std::string failure_file_name(std::string_view divergence, std::string_view family, std::int64_t k) {
  return std::string(divergence) + "-" + std::string(family) + "-" + std::to_string(k) + ".safetensors";
}

int default_jobs() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hw, 1u, 2u));
}

GateRun run_gate(const GateOptions& o, const Backend& backend, std::ostream& out, std::ostream& err) {
  const auto t0 = Clock::now();
  report::RunReport rep;
  rep.tool_version = kVersion;
  rep.started_at = utc_now_iso8601();
  rep.command_line = report::shell_join(o.command_line);
  rep.backend = std::string(backend.name());
  rep.seed = o.seed;
  rep.shard_index = o.shard_index;
  rep.shard_count = o.shard_count;
  rep.cases_per_divergence = o.only_case ? 1 : o.cases;
  rep.only_case = o.only_case;
  rep.families_filter = o.families;
  rep.time_budget = o.time_budget;
  rep.jobs = o.jobs;
  rep.out_dir = o.out_dir;
  rep.environment = collect_environment();

  // Plan: the stream of each selected divergence, filtered by shard and family.
  std::vector<DivergencePlan> plans;
  std::vector<WorkItem> items;
  for (DivergenceId id : selected_divergences(o)) {
    DivergencePlan plan{id, std::string(name_of(id)), 0};
    if (!backend.supports(id)) {
      // Reported as "not run", never as passed: the backend does not implement this row.
      plans.push_back(plan);
      continue;
    }
    const auto& fams = families(id);
    std::vector<std::int64_t> ks;
    if (o.only_case) {
      ks.push_back(*o.only_case);
    } else {
      for (std::int64_t k = 0; k < o.cases; ++k)
        if (on_shard(k, o.shard_index, o.shard_count)) ks.push_back(k);
    }
    for (std::int64_t k : ks) {
      if (fams.empty()) continue;
      const std::string family(fams[family_index(k, fams.size())].name);
      if (!family_selected(o, family)) continue;
      items.push_back({plans.size(), k, family, case_seed(o.seed, plan.name, k), case_size(k)});
      ++plan.planned;
    }
    plans.push_back(plan);
  }
  // Start the cases k-major (case 0 of every divergence, then case 1, ...), so that a time
  // budget cuts every divergence at about the same case index instead of leaving the last rows
  // of the registry unrun. Within a divergence the items stay in k order, so its case list, which
  // failures are shrunk (the first by index) and every result are the same in either order.
  std::stable_sort(items.begin(), items.end(), [](const WorkItem& a, const WorkItem& b) { return a.k < b.k; });

  out << "divcheck check: backend " << rep.backend << ", seed " << o.seed << ", shard " << o.shard_index << "/"
      << o.shard_count << ", "
      << (o.only_case ? "only case " + std::to_string(*o.only_case) : std::to_string(o.cases) + " cases")
      << " per divergence, " << plans.size() << " divergences, " << items.size() << " cases on this shard, jobs "
      << o.jobs;
  if (o.time_budget) out << ", time budget " << *o.time_budget << " s";
  out << ", out " << o.out_dir << "\n";
  out.flush();

  // Phase 1: run every case (until the time budget), results by index.
  std::vector<ItemResult> results(items.size());
  Progress progress(err, plans, t0, o.verbose);
  std::atomic<bool> budget_hit{false};
  parallel_for(items.size(), o.jobs, [&](std::size_t i) {
    if (o.time_budget && seconds_since(t0) > *o.time_budget) {
      budget_hit.store(true);
      return false;
    }
    progress.started(items[i]);
    results[i] = run_item(items[i], plans[items[i].div].id, backend);
    progress.finished(items[i], results[i]);
    return true;
  }, [&] { progress.tick(); });
  rep.budget_exhausted = budget_hit.load();
  if (rep.budget_exhausted)
    progress.line("time budget of " + std::to_string(*o.time_budget) + " s exhausted after " +
                  report::format_seconds(seconds_since(t0)) + "; no new case started");

  // Phase 2: shrink and save the failures (the first shrink_cases of each divergence by index).
  std::vector<std::size_t> failing;
  std::vector<int> shrink_quota(plans.size(), o.shrink_cases);
  std::vector<bool> shrink_it(items.size(), false);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!results[i].ran || results[i].record.passed) continue;
    failing.push_back(i);
    if (shrink_quota[items[i].div] > 0) {
      --shrink_quota[items[i].div];
      shrink_it[i] = true;
    }
  }
  if (!failing.empty()) progress.line("shrinking and saving " + std::to_string(failing.size()) + " failing case(s)");
  std::vector<report::FailureRecord> failure_records(failing.size());
  parallel_for(failing.size(), o.jobs, [&](std::size_t j) {
    const std::size_t i = failing[j];
    failure_records[j] = make_failure(o, plans[items[i].div], results[i], shrink_it[i], backend);
    return true;
  }, [] {});

  // Report.
  for (std::size_t p = 0; p < plans.size(); ++p) {
    report::DivergenceRecord d;
    d.name = plans[p].name;
    d.planned = plans[p].planned;
    if (!backend.supports(plans[p].id)) d.not_run = "unsupported by backend " + std::string(backend.name());
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i].div == p && results[i].ran) d.case_list.push_back(results[i].record);
    for (std::size_t j = 0; j < failing.size(); ++j)
      if (items[failing[j]].div == p) d.failures.push_back(failure_records[j]);
    report::summarize(d);
    d.budget_exhausted = d.cases < d.planned;
    rep.divergences.push_back(std::move(d));
  }
  rep.wall_seconds = seconds_since(t0);

  const std::filesystem::path dir(o.out_dir);
  report::write_file_atomically((dir / "report.json").string(),
                                report::to_json(rep).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                    "\n");
  report::write_file_atomically((dir / "junit.xml").string(), report::to_junit_xml(rep));
  report::write_file_atomically((dir / "report.md").string(), report::to_markdown(rep));

  out << "\n" << report::summary_table(rep);
  if (!rep.passed()) out << "\n" << report::failure_list(rep);
  out << "\n"
      << (rep.passed() ? "PASS" : "FAIL") << ": " << rep.total_failed() << " failing case(s)"
      << (rep.budget_exhausted ? " (time budget exhausted: not every planned case ran)" : "") << ", wall time "
      << report::format_seconds(rep.wall_seconds) << "; reports in " << (dir / "report.json").string() << ", "
      << (dir / "junit.xml").string() << ", " << (dir / "report.md").string() << "\n";
  out.flush();
  return GateRun{rep.passed() ? 0 : 1, std::move(rep)};
}

}  // namespace divcheck::gate
