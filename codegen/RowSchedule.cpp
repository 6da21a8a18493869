// Row kernel pass planning (RowSchedule.h).
#include "codegen/RowSchedule.h"

#include <algorithm>

namespace kiln::codegen {

namespace {

constexpr size_t kMaxSpills = 4;

/// Worth keeping in a scratch row for later passes rather than computing again.
bool costly(ExprOp op) { return is_vector_math(op) || op == ExprOp::Div || op == ExprOp::Sqrt; }

}  // namespace

std::vector<bool> needed_for(const Kernel& k, const std::vector<int32_t>& targets, const std::vector<bool>& available) {
  std::vector<bool> need(k.exprs.size(), false);
  for (int32_t t : targets) need[static_cast<size_t>(t)] = true;
  for (size_t i = k.exprs.size(); i-- > 0;) {
    if (!need[i] || available[i]) continue;
    for (int32_t x : {k.exprs[i].a, k.exprs[i].b, k.exprs[i].c}) {
      if (x >= 0) need[static_cast<size_t>(x)] = true;
    }
  }
  return need;
}

RowSchedule schedule_rows(const Kernel& k) {
  const size_t n = k.exprs.size();
  RowSchedule s;
  s.stage.assign(n, 0);
  s.uniform.assign(n, true);
  s.live.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[i];
    if (e.op == ExprOp::Load) {
      const RowOperand r = k.input_roles[static_cast<size_t>(e.input)];
      s.uniform[i] = r == RowOperand::PerRow || r == RowOperand::Scalar;
      continue;
    }
    for (int32_t x : {e.a, e.b, e.c}) {
      if (x < 0) continue;
      s.stage[i] = std::max(s.stage[i], s.stage[static_cast<size_t>(x)]);
      if (!s.uniform[static_cast<size_t>(x)]) s.uniform[i] = false;
    }
    if (is_reduction(e.op)) {
      s.stage[i] = std::max(s.stage[static_cast<size_t>(e.a)], e.b >= 0 ? s.stage[static_cast<size_t>(e.b)] : 0) + 1;
      s.uniform[i] = true;
    }
  }
  for (int32_t o : k.outputs) s.live[static_cast<size_t>(o)] = true;
  for (size_t i = n; i-- > 0;) {
    if (!s.live[i]) continue;
    for (int32_t x : {k.exprs[i].a, k.exprs[i].b, k.exprs[i].c}) {
      if (x >= 0) s.live[static_cast<size_t>(x)] = true;
    }
  }
  int passes = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s.live[i] && is_reduction(k.exprs[i].op)) passes = std::max(passes, s.stage[i]);
  }
  s.reduces.resize(static_cast<size_t>(passes));
  for (size_t i = 0; i < n; ++i) {
    if (s.live[i] && is_reduction(k.exprs[i].op)) s.reduces[static_cast<size_t>(s.stage[i] - 1)].push_back(static_cast<int32_t>(i));
  }
  // What each pass computes without scratch (pass passes + 1: the element outputs).
  std::vector<int32_t> element_outputs;
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    if (k.output_roles[o] == RowOperand::Element) element_outputs.push_back(k.outputs[o]);
  }
  const auto computed = [&](int pass, const std::vector<bool>& spilled) {
    std::vector<bool> available(n, false);
    for (size_t i = 0; i < n; ++i) available[i] = (s.uniform[i] && s.stage[i] < pass) || spilled[i];
    std::vector<int32_t> targets;
    if (pass <= passes) {
      for (int32_t r : s.reduces[static_cast<size_t>(pass - 1)]) {
        targets.push_back(k.exprs[static_cast<size_t>(r)].a);
        if (k.exprs[static_cast<size_t>(r)].b >= 0) targets.push_back(k.exprs[static_cast<size_t>(r)].b);  // a ReduceSum of a * b
      }
    } else {
      targets = element_outputs;
    }
    std::vector<bool> need = needed_for(k, targets, available);
    for (size_t i = 0; i < n; ++i) need[i] = need[i] && !available[i];
    return need;
  };
  std::vector<bool> spilled(n, false);
  for (int p = 1; p <= passes; ++p) {
    const std::vector<bool> here = computed(p, spilled);
    std::vector<bool> costly_cone(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (!here[i]) continue;
      costly_cone[i] = costly(k.exprs[i].op);
      for (int32_t x : {k.exprs[i].a, k.exprs[i].b, k.exprs[i].c}) {
        if (x >= 0 && here[static_cast<size_t>(x)] && costly_cone[static_cast<size_t>(x)]) costly_cone[i] = true;
      }
    }
    for (int q = p + 1; q <= passes + 1 && s.spilled.size() < kMaxSpills; ++q) {
      const std::vector<bool> later = computed(q, spilled);
      for (size_t u = 0; u < n && s.spilled.size() < kMaxSpills; ++u) {
        if (!later[u] || here[u]) continue;  // a user computed in pass q but not in pass p
        for (int32_t x : {k.exprs[u].a, k.exprs[u].b, k.exprs[u].c}) {
          if (x < 0) continue;
          const size_t e = static_cast<size_t>(x);
          if (here[e] && later[e] && !s.uniform[e] && costly_cone[e] && !spilled[e] && s.spilled.size() < kMaxSpills) {
            spilled[e] = true;
            s.spilled.push_back(x);
            s.spill_pass.push_back(p);
          }
        }
      }
    }
  }
  return s;
}

int64_t row_scratch_bytes(const RowSchedule& s, int64_t cols) {
  return static_cast<int64_t>(s.spilled.size()) * cols * 8;
}

}  // namespace kiln::codegen
