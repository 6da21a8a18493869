// Node bookkeeping: sequence numbers, hooks, names.
#include "eager/autograd/Node.h"

#include <atomic>
#include <cstdlib>
#include <cxxabi.h>
#include <typeinfo>

#include "eager/core/Error.h"

namespace kiln::autograd {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node() : sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

std::string Node::name() const {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(*this).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : typeid(*this).name();
  std::free(demangled);
  const size_t colon = out.rfind("::");
  return colon == std::string::npos ? out : out.substr(colon + 2);
}

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.push_back(InputMetadata{DimVector(t.sizes()), t.dtype(), t.device()});
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

uint32_t Node::add_input_metadata(InputMetadata meta) {
  input_metadata_.push_back(std::move(meta));
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

size_t Node::add_tensor_pre_hook(uint32_t input_nr, std::function<Tensor(const Tensor&)> hook, bool run_last) {
  static std::atomic<size_t> next_id{1};
  const size_t id = next_id.fetch_add(1);
  tensor_hooks_.push_back(TensorHook{id, input_nr, std::move(hook), run_last});
  return id;
}

void Node::remove_tensor_pre_hook(size_t id) {
  for (auto it = tensor_hooks_.begin(); it != tensor_hooks_.end(); ++it) {
    if (it->id == id) {
      tensor_hooks_.erase(it);
      return;
    }
  }
}

variable_list Node::operator()(variable_list&& grads) {
  for (const bool last : {false, true}) {
    for (const auto& h : tensor_hooks_) {
      if (h.run_last != last || h.input_nr >= grads.size() || !grads[h.input_nr].defined()) continue;
      Tensor replaced = h.fn(grads[h.input_nr]);
      if (replaced.defined()) grads[h.input_nr] = std::move(replaced);
    }
  }
  for (const auto& hook : pre_hooks_) {
    variable_list replaced = hook(grads);
    for (size_t i = 0; i < replaced.size() && i < grads.size(); ++i) {
      if (replaced[i].defined()) grads[i] = std::move(replaced[i]);
    }
  }
  variable_list inputs = post_hooks_.empty() ? variable_list() : grads;
  variable_list outputs = apply(std::move(grads));
  for (const auto& hook : post_hooks_) {
    variable_list replaced = hook(outputs, inputs);
    if (!replaced.empty()) outputs = std::move(replaced);
  }
  return outputs;
}

variable_list NotImplementedNode::apply(variable_list&&) {
  KILN_FAIL(NotImplemented, "the derivative for '", op_, "' is not implemented.");
}

}  // namespace kiln::autograd
