// Kernel IR -> LLVM IR (explicit host-width vectors, masked tails) -> ORC LLJIT.
#include "codegen/llvm/KernelJit.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

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
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm/KernelLowering.h"
#include "codegen/llvm/VectorMath.h"
#include "eager/core/Error.h"

namespace kiln::codegen {

namespace {

std::string kernel_name(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "kernel_%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

/// The process's JIT: one LLJIT for the host, the math symbols defined, and the kernel cache.
struct Jit {
  std::mutex mu;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::string cpu, features;
  std::unordered_map<uint64_t, KernelFn> cache;

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

CompiledKernels compile_kernels(std::vector<Kernel>& kernels, bool keep_llvm_ir) {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  CompiledKernels result;
  std::vector<uint64_t> hashes;
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("kiln_kernels", *ctx);
  module->setDataLayout(j.tm->createDataLayout());
  module->setTargetTriple(j.tm->getTargetTriple().str());
  std::unordered_map<uint64_t, bool> in_module;
  for (Kernel& k : kernels) {
    const uint64_t h = k.hash();
    hashes.push_back(h);
    k.name = kernel_name(h);
    if (j.cache.count(h) || in_module.count(h)) continue;
    in_module[h] = true;
    Lowering(*module, k, host_vector_lanes(), j.cpu, j.features).emit();
  }
  if (!in_module.empty()) {
    std::string err;
    llvm::raw_string_ostream es(err);
    KILN_CHECK(!llvm::verifyModule(*module, &es), "codegen: invalid LLVM IR: ", es.str());
    j.optimize(*module);
    if (keep_llvm_ir) {
      llvm::raw_string_ostream os(result.llvm_ir);
      module->print(os, nullptr);
    }
    llvm::cantFail(j.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))));
    for (const auto& [h, unused] : in_module) {
      auto sym = j.jit->lookup(kernel_name(h));
      KILN_CHECK(static_cast<bool>(sym), "codegen: ", llvm::toString(sym.takeError()));
      j.cache[h] = sym->toPtr<KernelFn>();
    }
  }
  for (uint64_t h : hashes) result.functions.push_back(j.cache.at(h));
  return result;
}

int64_t compiled_kernel_count() {
  Jit& j = the_jit();
  std::lock_guard<std::mutex> lock(j.mu);
  return static_cast<int64_t>(j.cache.size());
}

}  // namespace kiln::codegen
