// kiln's rendezvous stores (eager/distributed): the TCP store's server and
// client, the file store's record log, prefixes, waiting with a timeout, and a
// one-process Gloo group (the multi-process collectives are tested from Python,
// tests/python/distributed/).
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "eager/core/Error.h"
#include "eager/distributed/FileStore.h"
#include "eager/distributed/ProcessGroupGloo.h"
#include "eager/distributed/TcpStore.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::distributed {
namespace {

using std::chrono::milliseconds;

Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

void exercise(Store& store) {
  store.set("a", bytes("one"));
  EXPECT_EQ(store.get("a"), bytes("one"));
  Bytes value;
  EXPECT_FALSE(store.try_get("missing", value));
  EXPECT_EQ(store.add("n", 2), 2);
  EXPECT_EQ(store.add("n", 3), 5);
  EXPECT_EQ(store.get("n"), bytes("5"));
  EXPECT_TRUE(store.check({"a", "n"}));
  EXPECT_FALSE(store.check({"a", "missing"}));
  EXPECT_EQ(store.compare_set("a", bytes("one"), bytes("two")), bytes("two"));
  EXPECT_EQ(store.compare_set("a", bytes("one"), bytes("three")), bytes("two"));
  EXPECT_TRUE(store.delete_key("a"));
  EXPECT_FALSE(store.delete_key("a"));
  EXPECT_THROW(store.wait({"never"}, milliseconds(30)), kiln::Error);
}

TEST(TcpStore, SetGetAddWaitOnOneServer) {
  TcpStore master("127.0.0.1", 0, /*is_master=*/true, milliseconds(2000));
  ASSERT_GT(master.port(), 0);
  exercise(master);
  TcpStore client("127.0.0.1", master.port(), /*is_master=*/false, milliseconds(2000));
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(20));
    master.set("late", bytes("x"));
  });
  EXPECT_EQ(client.get("late"), bytes("x"));  // waits for the other client's set
  later.join();
}

TEST(TcpStore, ConnectingToNoServerTimesOut) {
  // A client of a port nobody serves fails within its timeout, naming the address.
  try {
    TcpStore client("127.0.0.1", 1, /*is_master=*/false, milliseconds(100));
    FAIL() << "expected a connection error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not connect to 127.0.0.1:1"), std::string::npos) << e.what();
  }
}

TEST(FileStore, RecordsAreSharedAndTheFileGoesWithTheLastStore) {
  const std::string path = ::testing::TempDir() + "kiln_file_store_" + std::to_string(::getpid());
  {
    FileStore first(path, milliseconds(2000));
    exercise(first);
    FileStore second(path, milliseconds(2000));
    first.set("shared", bytes("v"));
    EXPECT_EQ(second.get("shared"), bytes("v"));
    PrefixStore prefixed("group", std::make_shared<FileStore>(path, milliseconds(2000)));
    prefixed.set("k", bytes("p"));
    EXPECT_EQ(second.get("group/k"), bytes("p"));
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);  // removed by the last store to close
}

TEST(ProcessGroupGloo, OneProcessGroupRunsCollectives) {
  auto store = std::make_shared<TcpStore>("127.0.0.1", 0, true, milliseconds(5000));
  ProcessGroupGloo pg(store, 0, 1, milliseconds(5000), GlooDeviceAddress{"127.0.0.1", ""});
  Tensor t = full({3}, Scalar(2.0), DType::Float32);
  pg.all_reduce(t, ReduceOp::Avg)->wait();
  EXPECT_FLOAT_EQ(t.data_ptr<float>()[1], 2.0f);
  pg.barrier()->wait();
  EXPECT_THROW((void)pg.all_reduce(full({2}, Scalar(int64_t{1}), DType::Int64), ReduceOp::Avg), kiln::Error);
  EXPECT_THROW((void)pg.broadcast(t, 3), kiln::Error);
}

}  // namespace
}  // namespace kiln::distributed
