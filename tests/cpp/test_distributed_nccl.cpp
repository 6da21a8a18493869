// ProcessGroupNccl's parts that run without a GPU: the dtype and ReduceOp mapping to NCCL's enums
// (bool sums as MAX, products as MIN; int16 and AVG of integers refused), and the constructor's
// errors where NCCL or a GPU is missing. The collectives run in
// tests/python/distributed/test_nccl_device.py on a GPU machine.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"
#include "eager/distributed/FileStore.h"
#include "eager/distributed/ProcessGroupNccl.h"

namespace kiln::distributed {
namespace {

TEST(NcclMapping, DataTypesAreNcclsEnumValues) {
  EXPECT_EQ(nccl_data_type(DType::Int8, "t"), 0);
  EXPECT_EQ(nccl_data_type(DType::UInt8, "t"), 1);
  EXPECT_EQ(nccl_data_type(DType::Int32, "t"), 2);
  EXPECT_EQ(nccl_data_type(DType::Int64, "t"), 4);
  EXPECT_EQ(nccl_data_type(DType::Float16, "t"), 6);
  EXPECT_EQ(nccl_data_type(DType::Float32, "t"), 7);
  EXPECT_EQ(nccl_data_type(DType::Float64, "t"), 8);
  EXPECT_EQ(nccl_data_type(DType::BFloat16, "t"), 9);
  EXPECT_EQ(nccl_data_type(DType::Bool, "t"), 1);  // moved as uint8
  try {
    (void)nccl_data_type(DType::Int16, "all_reduce");
    FAIL() << "int16 was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce: input tensor data type is not supported for the NCCL process "
                                         "group: int16"), std::string::npos) << e.what();
  }
}

TEST(NcclMapping, ReduceOpsFollowTorchsNcclGroup) {
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Sum, DType::Float32, "t"), kNcclSum);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Avg, DType::BFloat16, "t"), kNcclAvg);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Product, DType::Int64, "t"), kNcclProd);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Min, DType::Int32, "t"), kNcclMin);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Max, DType::Float16, "t"), kNcclMax);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Sum, DType::Bool, "t"), kNcclMax);      // logical or
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Product, DType::Bool, "t"), kNcclMin);  // logical and
  EXPECT_EQ(nccl_reduce_op(ReduceOp::Avg, DType::Complex64, "t"), kNcclAvg);
  EXPECT_THROW((void)nccl_reduce_op(ReduceOp::Avg, DType::Int64, "t"), kiln::Error);
  EXPECT_THROW((void)nccl_reduce_op(ReduceOp::Avg, DType::Bool, "t"), kiln::Error);
  EXPECT_THROW((void)nccl_reduce_op(ReduceOp::Max, DType::Complex128, "t"), kiln::Error);
  EXPECT_THROW((void)nccl_reduce_op(ReduceOp::Product, DType::Complex64, "t"), kiln::Error);
}

TEST(NcclGroup, ConstructionNamesWhatIsMissing) {
  EXPECT_THROW(ProcessGroupNccl(nullptr, 1, 1, std::chrono::milliseconds(10), -1), kiln::Error);  // rank >= size
  if (cuda::device_count() > 0 && nccl_loadable()) return;  // both are here: test_nccl_device.py makes groups
  const std::string path = ::testing::TempDir() + "kiln_nccl_store_" + std::to_string(::getpid());
  auto store = std::make_shared<FileStore>(path, std::chrono::milliseconds(2000));
  try {
    ProcessGroupNccl group(store, 0, 1, std::chrono::milliseconds(2000), -1);
    FAIL() << "a NCCL group was made without NCCL or a GPU";
  } catch (const kiln::Error& e) {
    const std::string message = e.what();
    const bool no_library = message.find("libnccl.so.2") != std::string::npos;
    const bool no_gpu = message.find("ProcessGroupNCCL is only supported with GPUs, no GPUs found!") !=
                        std::string::npos;
    EXPECT_TRUE(no_library || no_gpu) << message;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kiln::distributed
