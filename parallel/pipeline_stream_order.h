// Whether a schedule's sends and receives can be queued on the communication stream as NCCL point-to-point, which
// matches messages per peer in issue order (no tags) and completes a send only once its receive is posted: each
// stage issues each exchange (the actions between two compute actions) as one NCCL group, in its action order.
#pragma once
#include <string>

#include "parallel/schedule/schedule.h"

namespace parbench {

// "" when it can: on every link the i-th message sent is the i-th received (the same microbatch, virtual stage
// and direction), and the groups complete (a replay where a stage's group starts once its previous one is done
// and completes once every peer has started the group holding its counterpart). Else why not.
std::string stream_order_problem(const PipeSchedule& schedule);

}  // namespace parbench
