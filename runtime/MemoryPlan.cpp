// Liveness, in-place reuse and the arena layout of a CompiledGraph's steps.
#include "runtime/MemoryPlan.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace kiln::runtime {

namespace {

constexpr int64_t kArenaAlignment = 64;  // bytes; every arena range starts on a cache line
constexpr size_t kForever = std::numeric_limits<size_t>::max();

int64_t aligned(int64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

/// One arena range: its bytes and the steps [first, last] it is live.
struct Buffer {
  int64_t bytes = 0;
  size_t first = 0, last = 0;
  int64_t offset = -1;
};

/// First fit, largest first: each buffer at the lowest offset clear of every placed buffer it overlaps in time.
int64_t place(std::vector<Buffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t i : order) {
    Buffer& b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of placed buffers live at the same time
    for (size_t j : placed) {
      const Buffer& o = buffers[j];
      if (o.first <= b.last && b.first <= o.last) taken.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : taken) {
      if (offset + b.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    total = std::max(total, offset + b.bytes);
    placed.push_back(i);
  }
  return total;
}

}  // namespace

MemoryPlan plan_memory(const MemoryPlanInput& in) {
  const size_t n = in.steps.size();
  MemoryPlan plan;
  plan.release.resize(n);
  plan.in_place.resize(n);
  plan.arena_offset.resize(n);

  // Liveness: each slot's last read, each storage class's last read (graph outputs: never dead).
  std::vector<size_t> last_read(in.num_slots, kForever);
  std::vector<size_t> class_last(in.class_written.size(), 0);
  for (size_t s = 0; s < n; ++s) {
    for (size_t slot : in.steps[s].reads) {
      last_read[slot] = s;
      class_last[in.storage_class[slot]] = std::max(class_last[in.storage_class[slot]], s);
    }
    for (size_t slot : in.steps[s].writes) {
      class_last[in.storage_class[slot]] = std::max(class_last[in.storage_class[slot]], s);
    }
  }
  std::vector<bool> is_output(in.num_slots, false);
  for (size_t slot : in.graph_outputs) is_output[slot] = true;
  for (size_t slot = 0; slot < in.num_slots; ++slot) {
    if (last_read[slot] != kForever && !is_output[slot]) plan.release[last_read[slot]].push_back(slot);
  }
  for (auto& r : plan.release) std::sort(r.begin(), r.end());

  const auto free_class = [&](size_t c) { return !in.class_written[c] && !in.class_has_input[c] && !in.class_has_output[c]; };

  std::vector<Buffer> buffers;
  std::vector<int64_t> buffer_of(in.num_slots, -1);  // arena buffer of a slot
  std::vector<bool> class_in_arena(in.class_written.size(), false);  // some value of the class is in the arena
  std::vector<std::pair<size_t, size_t>> arena_writes;  // (step, write) placed in the arena
  for (size_t s = 0; s < n; ++s) {
    const PlanStep& step = in.steps[s];
    plan.in_place[s].assign(step.writes.size(), -1);
    plan.arena_offset[s].assign(step.writes.size(), -1);
    if (!step.kernel) continue;
    std::vector<bool> taken(step.reads.size(), false);
    for (size_t w = 0; w < step.writes.size(); ++w) {
      const size_t out = step.writes[w];
      const size_t out_class = in.storage_class[out];
      // In place: a same-layout read whose class dies here and that the kernel reads through no other value.
      for (size_t k : step.same_layout_reads[w]) {
        const size_t slot = step.reads[k];
        const size_t c = in.storage_class[slot];
        if (taken[k] || !free_class(c) || class_last[c] != s || last_read[slot] != s) continue;
        const bool alone = std::none_of(step.reads.begin(), step.reads.end(),
                                        [&](size_t other) { return other != slot && in.storage_class[other] == c; });
        if (!alone) continue;
        // In arena mode an arena output takes only an arena input's range (both planned); a
        // heap input stays the run's choice (Note [The memory plan]); a heap output never takes arena memory.
        if (in.arena && free_class(out_class) && buffer_of[slot] < 0) continue;
        if (class_in_arena[c] && (buffer_of[slot] < 0 || !free_class(out_class))) continue;
        taken[k] = true;
        plan.in_place[s][w] = static_cast<int32_t>(k);
        ++plan.in_place_count;
        break;
      }
      if (!in.arena || !free_class(out_class)) continue;
      const int32_t k = plan.in_place[s][w];
      if (k >= 0 && buffer_of[step.reads[static_cast<size_t>(k)]] >= 0) {
        const int64_t b = buffer_of[step.reads[static_cast<size_t>(k)]];
        buffers[static_cast<size_t>(b)].last = std::max(buffers[static_cast<size_t>(b)].last, class_last[out_class]);
        buffer_of[out] = b;
      } else {
        Buffer b;
        b.bytes = aligned(std::max<int64_t>(step.write_bytes[w], 1));
        b.first = s;
        b.last = class_last[out_class];
        buffer_of[out] = static_cast<int64_t>(buffers.size());
        buffers.push_back(b);
        class_in_arena[out_class] = true;
        plan.arena_unshared_bytes += b.bytes;
      }
      arena_writes.emplace_back(s, w);
    }
  }
  plan.arena_bytes = place(buffers);
  for (const auto& [s, w] : arena_writes) {
    plan.arena_offset[s][w] = buffers[static_cast<size_t>(buffer_of[in.steps[s].writes[w]])].offset;
    ++plan.arena_count;
  }
  return plan;
}

std::string MemoryPlan::str() const {
  std::ostringstream os;
  os << "memory plan: " << in_place_count << " in place, " << arena_count << " in the arena (" << arena_bytes
     << " bytes; " << arena_unshared_bytes << " unshared)\n";
  for (size_t s = 0; s < in_place.size(); ++s) {
    for (size_t w = 0; w < in_place[s].size(); ++w) {
      if (in_place[s][w] < 0 && arena_offset[s][w] < 0) continue;
      os << "  step " << s << " out" << w << ":";
      if (in_place[s][w] >= 0) os << " in place of read " << in_place[s][w];
      if (arena_offset[s][w] >= 0) os << " arena @" << arena_offset[s][w];
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace kiln::runtime
