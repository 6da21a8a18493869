// Kernel IR -> LLVM IR (explicit host-width vectors, masked tails) -> ORC LLJIT,
// through the kernel cache (KernelCache.h).
#include "codegen/llvm/KernelJit.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm/KernelCache.h"
#include "codegen/llvm/KernelLowering.h"
#include "codegen/llvm/VectorMath.h"
#include "eager/core/Error.h"
#include "eager/core/ProfilerEvents.h"

namespace kiln::codegen {

namespace {

std::string kernel_name(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "kernel_%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

/// The process's JIT: one LLJIT for the host, the math symbols defined, and the
/// kernel cache (Note [The kernel cache]): `cache` in memory, `disk` on disk.
struct Jit {
  std::mutex mu;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string cpu, features;
  std::unordered_map<uint64_t, KernelFn> cache;
  std::unique_ptr<KernelDiskCache> disk;
  llvm::orc::JITDylib* dylib = nullptr;  // where kernels are added (a fresh one after forget_compiled_kernels)
  int generation = 0;

  Jit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    KILN_CHECK(static_cast<bool>(jtmb), "codegen: cannot target the host: ", llvm::toString(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    cpu = jtmb->getCPU();
    features = jtmb->getFeatures().getString();
    auto made_tm = jtmb->createTargetMachine();
    KILN_CHECK(static_cast<bool>(made_tm), "codegen: ", llvm::toString(made_tm.takeError()));
    tm = std::move(*made_tm);
    auto made = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    KILN_CHECK(static_cast<bool>(made), "codegen: cannot start the JIT: ", llvm::toString(made.takeError()));
    jit = std::move(*made);
    llvm::orc::SymbolMap symbols;
    for (const auto& [name, address] : vector_math_symbols()) {
      symbols[jit->mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
          llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    }
    llvm::cantFail(jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))));
    dylib = &jit->getMainJITDylib();
    disk = std::make_unique<KernelDiskCache>(kernel_cache_environment(cpu, features, host_vector_lanes()));
  }

  /// One kernel lowered on its own module, optimised and compiled: its object file.
  std::string compile_to_object(const Kernel& k, const KernelSchedule& schedule, std::string* llvm_ir) {
    llvm::LLVMContext ctx;
    llvm::Module module("kiln_" + k.name, ctx);
    module.setDataLayout(tm->createDataLayout());
    module.setTargetTriple(tm->getTargetTriple().str());
    Lowering(module, k, host_vector_lanes(), cpu, features, schedule).emit();
    std::string err;
    llvm::raw_string_ostream es(err);
    KILN_CHECK(!llvm::verifyModule(module, &es), "codegen: invalid LLVM IR: ", es.str());
    optimize(module);
    if (llvm_ir != nullptr) {
      llvm::raw_string_ostream os(*llvm_ir);
      module.print(os, nullptr);
    }
    auto object = llvm::orc::SimpleCompiler(*tm)(module);
    KILN_CHECK(static_cast<bool>(object), "codegen: ", llvm::toString(object.takeError()));
    return (*object)->getBuffer().str();
  }

  /// The kernel's entry point: its object file from the disk cache, or compiled (and
  /// written there), added to the JIT. Not in `cache` yet.
  KernelFn load_or_compile(const Kernel& k, const KernelSchedule& schedule, std::string* llvm_ir) {
    const uint64_t h = scheduled_kernel_key(k, schedule);
    std::optional<std::string> object = disk->load(h);
    if (object) {
      if (llvm_ir != nullptr) *llvm_ir += "; " + k.name + ": loaded from the disk cache\n";
      if (profiler::is_active()) [[unlikely]] profiler::record_instant("kiln::kernel_disk_cache_hit", "jit");
    } else {
      count_miss();
      profiler::RecordScope compiling("kiln::llvm_compile", "jit");  // Note [What the profiler records]
      if (compiling.recording()) [[unlikely]] compiling.add_arg("kernel", k.name);
      object = compile_to_object(k, schedule, llvm_ir);
      disk->store(h, *object);
    }
    llvm::cantFail(jit->addObjectFile(*dylib, llvm::MemoryBuffer::getMemBufferCopy(*object, k.name)));
    auto sym = jit->lookup(*dylib, k.name);
    KILN_CHECK(static_cast<bool>(sym), "codegen: ", llvm::toString(sym.takeError()));
    return sym->toPtr<KernelFn>();
  }

  void optimize(llvm::Module& m) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(m, mam);
  }
};

Jit& the_jit() {
  static Jit* jit = new Jit();  // never destroyed: kernels may run during interpreter teardown
  return *jit;
}

}  // namespace

CompiledKernels compile_kernels(std::vector<Kernel>& kernels, bool keep_llvm_ir,
                                const std::vector<KernelSchedule>& schedules) {
  KILN_CHECK(schedules.empty() || schedules.size() == kernels.size(), "codegen: ", schedules.size(),
             " schedules for ", kernels.size(), " kernels");
  profiler::RecordScope range("kiln::jit_compile", "jit");  // Note [What the profiler records]
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  CompiledKernels result;
  int64_t memory_hits = 0;
  const KernelSchedule default_schedule;
  for (size_t i = 0; i < kernels.size(); ++i) {
    Kernel& k = kernels[i];
    const KernelSchedule& schedule = schedules.empty() ? default_schedule : schedules[i];
    const uint64_t h = scheduled_kernel_key(k, schedule);
    k.name = kernel_name(h);
    auto it = j.cache.find(h);
    if (it != j.cache.end()) {
      count_memory_hit();
      ++memory_hits;
      if (range.recording()) [[unlikely]] profiler::record_instant("kiln::kernel_cache_hit", "jit");
    } else {
      it = j.cache.emplace(h, j.load_or_compile(k, schedule, keep_llvm_ir ? &result.llvm_ir : nullptr)).first;
    }
    result.functions.push_back(it->second);
  }
  if (range.recording()) [[unlikely]] {
    range.add_arg("kernels", static_cast<int64_t>(kernels.size()));
    range.add_arg("cache hits", memory_hits);
  }
  return result;
}

void forget_compiled_kernels() {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  j.cache.clear();
  auto made = j.jit->createJITDylib("kiln_kernels_" + std::to_string(++j.generation));
  KILN_CHECK(static_cast<bool>(made), "codegen: ", llvm::toString(made.takeError()));
  made->addToLinkOrder(j.jit->getMainJITDylib());
  j.dylib = &*made;
}

KernelCachePruneResult prune_kernel_disk_cache(int64_t max_bytes) {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  return j.disk->prune(max_bytes);
}

std::optional<std::string> load_autotune_choice(const std::string& choice_key) {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  return j.disk->load_choice(choice_key);
}

void store_autotune_choice(const std::string& choice_key, const std::string& choice) {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  j.disk->store_choice(choice_key, choice);
}

int64_t compiled_kernel_count() {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  return static_cast<int64_t>(j.cache.size());
}

}  // namespace kiln::codegen
