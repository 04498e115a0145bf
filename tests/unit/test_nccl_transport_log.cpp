// Reading NCCL's connection lines (format strings of NCCL's src/transport/{p2p,shm,net}.cc) into a label.
#include <gtest/gtest.h>

#include "collectives/nccl_transport_log.h"

namespace sb {
namespace {

TEST(NcclTransportLog, NvlinkP2P) {
  const std::string log =
      "vm:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.2<0>\n"
      "vm:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "vm:1:9 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "vm:1:9 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n";
  EXPECT_EQ(parse_nccl_transports(log), (std::vector<std::string>{"P2P/CUMEM/read"}));
}

TEST(NcclTransportLog, ShmAndNetDropChannelIndices) {
  const std::string log =
      "x NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
      "x NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0\n"
      "x NCCL INFO Channel 01/0 : 1[1] -> 0[0] [receive] via NET/Socket/1\n"
      "x NCCL INFO Channel 02/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n"
      "x NCCL INFO Channel 03/0 : 0[0] -> 2[2] via P2P/indirect/1[1]\n"
      "x NCCL INFO Channel 04/0 : 0[0] -> 1[1] via P2P/direct pointer\n";
  EXPECT_EQ(parse_nccl_transports(log),
            (std::vector<std::string>{"SHM/direct/direct", "NET/Socket", "NET/IB/GDRDMA", "P2P/indirect",
                                      "P2P/direct"}));
}

TEST(NcclTransportLog, NothingFoundInUnrelatedText) {
  EXPECT_TRUE(parse_nccl_transports("NCCL INFO cudaDriverVersion 13000\nvia nothing here\n").empty());
}

TEST(NcclTransportLog, JoinsRanksWithoutDuplicates) {
  EXPECT_EQ(join_transports({"P2P/CUMEM/read", "P2P/CUMEM/read"}), "P2P/CUMEM/read");
  EXPECT_EQ(join_transports({"SHM/direct/direct", "SHM/direct/direct + NET/Socket"}),
            "SHM/direct/direct + NET/Socket");
  EXPECT_EQ(join_transports({}), "");
}

TEST(NcclTransportLog, KeepsTheUsersOwnNcclDebug) {
  EXPECT_EQ(capture_nccl_log({{"NCCL_DEBUG", "WARN"}}, 42), "");
}

}  // namespace
}  // namespace sb
