// Grad mode: whether ops record autograd history on this thread.
// no_grad / enable_grad / set_grad_enabled in Python are guards over this.
#pragma once

namespace kiln::autograd {

struct GradMode {
  [[nodiscard]] static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Sets grad mode for a scope and restores the previous mode.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};

}  // namespace kiln::autograd
