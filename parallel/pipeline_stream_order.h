// Whether a schedule's sends and receives can be queued on the communication stream as NCCL point-to-point, which
// matches messages per peer in issue order (no tags) and completes a send only once its receive is posted: each
// stage issues each exchange (the actions between two compute actions) as one NCCL group, in its action order.
#pragma once
#include <optional>
#include <string>

#include "parallel/schedule/schedule.h"

namespace parbench {

// "" when it can: on every link the i-th message sent is the i-th received (the same microbatch, virtual stage
// and direction), and the groups complete (a replay where a stage's group starts once its previous one is done
// and completes once every peer has started the group holding its counterpart). Else why not.
std::string stream_order_problem(const PipeSchedule& schedule);

// The schedule with the same compute order on every stage and its sends and receives moved to where a replay
// (unit costs, free communication) has each message: sent as its producer ends, received before the first compute
// action that starts no earlier. Every stage then issues the messages it shares with a peer in one global order (by
// that time), each after its producer and before its consumer, which NCCL's matching completes for any schedule
// the checker accepts. Throws Error for a schedule the replay refuses.
PipeSchedule exchanges_at_replay_times(const PipeSchedule& schedule);

// What runs on the NCCL stream path: the schedule itself when stream_order_problem accepts it, else its
// replayed form when that is accepted; nullopt when neither is (the host transports, matched by tag, run it).
std::optional<PipeSchedule> stream_ordered_schedule(const PipeSchedule& schedule);

}  // namespace parbench
