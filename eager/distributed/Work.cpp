// Completing and waiting on Work.
#include "eager/distributed/Work.h"

#include "eager/core/Error.h"

namespace kiln::distributed {

bool QueuedWork::is_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void QueuedWork::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  KILN_CHECK(error_.empty(), error_);
}

void QueuedWork::finish(std::string error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    done_ = true;
    tensors_.clear();
  }
  done_cv_.notify_all();
}

void CompletedWork::wait() { KILN_CHECK(error_.empty(), error_); }

bool PointToPointWork::is_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void PointToPointWork::wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!done_) {
    try {
      source_rank_ = waiter_();
    } catch (const std::exception& e) {
      error_ = what_ + " failed: " + e.what();
    }
    done_ = true;
    buffer_.reset();
    tensor_ = Tensor();
  }
  KILN_CHECK(error_.empty(), error_);
}

}  // namespace kiln::distributed
