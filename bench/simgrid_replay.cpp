// SimGrid S4U replay of a ccmod TI trace, for bench/bench_engine.py's side-by-side runs.
//
// One actor per rank; blocking mailbox put/get (one mailbox per src->dst pair, so messages
// match in order like MPI's non-overtaking rule); compute as execute(flops).
// Usage: simgrid_replay platform.xml trace.ti host_of_rank.txt  [--cfg=...]
// Prints "events <n> makespan <seconds>" (events = trace records replayed).
#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

struct Op {
  char kind;  // 's' send, 'r' recv, 'c' compute
  int peer;
  double amount;
};

static std::vector<std::vector<Op>> ops;
static long long replayed = 0;

static void rank_actor(int r)
{
  for (const Op& op : ops[r]) {
    if (op.kind == 'c') {
      sg4::this_actor::execute(op.amount);
    } else if (op.kind == 's') {
      sg4::Mailbox* mb = sg4::Mailbox::by_name(std::to_string(r) + "_" + std::to_string(op.peer));
      static int token = 0;
      mb->put(&token, (uint64_t)op.amount);
    } else {
      sg4::Mailbox* mb = sg4::Mailbox::by_name(std::to_string(op.peer) + "_" + std::to_string(r));
      mb->get<int>();
    }
    replayed++;
  }
}

int main(int argc, char** argv)
{
  sg4::Engine e(&argc, argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s platform.xml trace.ti host_of_rank.txt\n", argv[0]);
    return 2;
  }
  e.load_platform(argv[1]);
  std::ifstream in(argv[2]);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream ss(line);
    int r;
    std::string what;
    ss >> r >> what;
    if ((int)ops.size() <= r)
      ops.resize(r + 1);
    if (what == "send" || what == "recv") {
      int peer, tag;
      double bytes;
      ss >> peer >> tag >> bytes;
      ops[r].push_back({what == "send" ? 's' : 'r', peer, bytes});
    } else if (what == "compute") {
      double flops;
      ss >> flops;
      ops[r].push_back({'c', -1, flops});
    }
  }
  std::ifstream hin(argv[3]);
  std::vector<std::string> host_of_rank;
  std::string h;
  while (hin >> h)
    host_of_rank.push_back(h);
  for (int r = 0; r < (int)ops.size(); r++)
    sg4::Actor::create("rank" + std::to_string(r), e.host_by_name(host_of_rank[r]), rank_actor, r);
  auto t0 = std::chrono::steady_clock::now();
  e.run();
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("events %lld makespan %.9f run_s %.6f\n", replayed, sg4::Engine::get_clock(), run_s);
  return 0;
}
