// RapidCheck keeps the context of a running generator (rc::gen::exec's handler stack, the
// implicit parameters) in static, not thread-local, storage, so two threads generating at once
// corrupt each other (seen as a crash in ExecHandler::onGenerate). Every draw, Shrinkable::value()
// and traversal of shrinks() in the gate runs under this one mutex; the backend, the reference
// and the verdict, where the time goes, run in parallel outside it.
#pragma once

#include <mutex>

namespace divcheck::gate {

std::mutex& rapidcheck_mutex();

}  // namespace divcheck::gate
