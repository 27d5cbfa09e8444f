// gradlane's switch behaviour for ns-3: classification, strict-priority queues, selective drop
// within loss budgets, ECN/PCN marking and queue telemetry, per packet in C++.
// Compiled at start-up by cppyy (sim/engine.py). The tables are filled from the entries the
// controller would install (sim/tables.py); this file holds no policy of its own.
#pragma once
#include <algorithm>
#include <array>
#include <unordered_map>
#include <cstdint>
#include <deque>
#include <vector>

#include "ns3/drop-tail-queue.h"
#include "ns3/ipv4-header.h"
#include "ns3/header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/packet-sink.h"
#include "ns3/queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/udp-header.h"

namespace gradlane_sim {

constexpr uint16_t kGradientPort = 19527;      // p4src/headers.p4 GRADLANE_UDP_PORT
constexpr uint8_t kKindData = 0;
constexpr uint8_t kFlagPull = 0x01;
constexpr uint8_t kFlagCritical = 0x10;
constexpr uint8_t kFlagPlain = 0x20;
constexpr uint32_t kPriorities = 8;
constexpr uint32_t kSlots = 1024;
constexpr uint32_t kLanes = 16;
constexpr uint32_t kInfinite = 0xFFFFFFFFu;
constexpr uint32_t kPcnExpiryUs = 2000000;    // p4src PCN_EXPIRY_US

// One gradient_class entry (set_class action).
struct ClassRule {
  uint32_t job_value, job_mask, layer_lo, layer_hi, mag_lo, mag_hi, epoch_value, epoch_mask;
  int32_t entry_priority;
  uint32_t prio, eligible, slot, push_bp, pull_bp, drop_threshold;
};

// One dscp_class entry (set_dscp_class action): ternary on the 6 DSCP bits.
struct DscpRule {
  uint32_t value, mask;
  int32_t entry_priority;
  uint32_t prio, drop_threshold;
};

// One ddl_flow entry (set_ddl_sender action): a DDL flow without the gradient header, matched
// by ternary source / destination / protocol and a destination-port range, and the (job,
// worker) whose PCN-START announces its bursts.
struct DdlFlowRule {
  uint32_t src_value, src_mask, dst_value, dst_mask, proto_value, proto_mask, port_lo, port_hi;
  int32_t entry_priority;
  uint32_t job, rank;
};

struct JobFeatures {
  uint32_t job, spray, prioritize, selective_drop;
};

// The 32-byte gradient header (docs/contracts.md), the fields the switch reads.
struct Gradient {
  uint8_t kind, flags;
  uint16_t job, rank, layer;
  uint32_t round;
  uint8_t mag, epoch;
};

// Tables, budgets and counters of one switch; shared by the queue discs of its ports.
class SwitchState {
 public:
  // Vectors are sized from `ports` (not ports_: members initialise in declaration order).
  explicit SwitchState(uint32_t ports)
      : slot_seen(kSlots * 2), slot_dropped(kSlots * 2), slot_marked(kSlots),
        queue_tx((ports + 1) * kPriorities), queue_marked((ports + 1) * kPriorities),
        queue_selective_drops((ports + 1) * kPriorities), queue_tail_drops((ports + 1) * kPriorities),
        queue_max_depth((ports + 1) * kPriorities), pcn_start(ports + 1), pcn_arrival(ports + 1),
        pcn_expired(ports + 1), ports_(ports + 1), budget_round_(kSlots * 2 * kLanes, kInfinite),
        budget_seen_(kSlots * 2 * kLanes), budget_dropped_(kSlots * 2 * kLanes),
        ecn_normal_(ports + 1, kInfinite), ecn_pcn_(ports + 1, kInfinite), pcn_count_(ports + 1),
        pcn_threshold_(ports + 1), pcn_deadline_(ports + 1), mark_on_port_(ports + 1, false) {}

  // -- tables (filled by sim/tables.py) ----------------------------------------------------
  void AddClassRule(const ClassRule& r) { class_rules_.push_back(r); }
  void AddDscpRule(const DscpRule& r) { dscp_rules_.push_back(r); }
  void AddJobFeatures(const JobFeatures& f) { features_.push_back(f); }
  void AddPcnJob(uint32_t job, uint32_t threshold) { pcn_jobs_.push_back({job, threshold}); }
  void AddDdlFlow(const DdlFlowRule& r) { ddl_flows_.push_back(r); }
  void SetEcn(uint32_t port, uint32_t normal, uint32_t pcn) {
    if (port < ports_) { ecn_normal_[port] = normal; ecn_pcn_[port] = pcn; }
  }
  uint32_t NumPorts() const { return ports_ - 1; }
  // What a port compares its ECN threshold with (the ecn_depth table): the packet's own
  // priority queue (false, default), or the port's occupancy over all its priority queues.
  void SetMarkOnPortOccupancy(uint32_t port, bool on) { if (port < ports_) mark_on_port_[port] = on; }
  bool MarkOnPortOccupancy(uint32_t port) const { return port < ports_ && mark_on_port_[port]; }

  // -- counters (read by Python after the run) ---------------------------------------------
  // slot_seen/slot_dropped are per stage index slot * 2 + stage (0 push, 1 pull)
  std::vector<uint64_t> slot_seen, slot_dropped, slot_marked;
  std::vector<uint64_t> queue_tx, queue_marked, queue_selective_drops, queue_tail_drops;
  std::vector<uint32_t> queue_max_depth;
  std::vector<uint64_t> pcn_start, pcn_arrival, pcn_expired;   // per port

  // -- per packet --------------------------------------------------------------------------
  // What ingress decides for one packet: its queue, or drop (selective or commodity).
  struct Verdict {
    uint32_t prio = 0;
    bool drop = false;
    int32_t slot = -1;
    bool grad_data = false;
    bool has_grad = false;
    Gradient g{};
    const DdlFlowRule* ddl = nullptr;   // a ddl_flow entry matched (packets without the gradient header)
  };

  Verdict Ingress(uint32_t port, const ns3::Ipv4Header& ip, ns3::Ptr<const ns3::Packet> payload,
                  const std::vector<uint32_t>& depths) {
    Verdict v;
    Gradient& g = v.g;
    v.has_grad = ParseGradient(ip, payload, g);
    if (!v.has_grad) v.ddl = MatchDdlFlow(ip, payload);
    bool plain = v.has_grad && (g.flags & kFlagPlain);
    uint32_t prioritize = 1, selective = 1;
    if (v.has_grad && !plain) {
      for (const auto& f : features_)
        if (f.job == g.job) { prioritize = f.prioritize; selective = f.selective_drop; }
      v.grad_data = g.kind == kKindData;
    }
    bool is_protected = v.has_grad && (g.kind != kKindData || (g.flags & kFlagCritical));
    uint32_t drop_threshold = kInfinite;
    uint32_t eligible = 0;
    const ClassRule* cls = nullptr;
    bool by_dscp = false;
    if (v.has_grad && !plain) {
      if (v.grad_data) {
        cls = MatchClass(g);
        if (cls) {
          v.prio = cls->prio; eligible = cls->eligible; v.slot = cls->slot;
          drop_threshold = cls->drop_threshold;
        }
        by_dscp = !prioritize;
      } else {
        v.prio = 7;
      }
    } else {
      by_dscp = true;
      eligible = (ip.GetEcn() == ns3::Ipv4Header::ECN_NotECT && !is_protected) ? 1 : 0;
    }
    if (by_dscp) {
      uint32_t dscp = ip.GetTos() >> 2;
      const DscpRule* d = MatchDscp(dscp);
      v.prio = d ? d->prio : 0;
      if (!v.grad_data) drop_threshold = d ? d->drop_threshold : kInfinite;
    }
    uint32_t depth = depths[v.prio];
    bool sel_drop = false;
    if (v.grad_data && cls) {
      uint32_t stage = (g.flags & kFlagPull) ? 1 : 0;
      uint32_t lane = stage ? (ip.GetDestination().Get() * 2654435761u >> 28) % kLanes : g.rank % kLanes;
      uint32_t stage_slot = cls->slot * 2 + stage;
      uint32_t b = stage_slot * kLanes + lane;
      bool fresh = budget_round_[b] != g.round;
      uint64_t seen = (fresh ? 0 : budget_seen_[b]) + 1;
      uint64_t dropped = fresh ? 0 : budget_dropped_[b];
      uint64_t bound = stage ? cls->pull_bp : cls->push_bp;
      bool within = (dropped + 1) * 10000 <= seen * bound;
      bool congested = depth > drop_threshold;
      bool can_drop = eligible && selective && !(g.flags & kFlagCritical);
      sel_drop = can_drop && congested && within;
      budget_round_[b] = g.round; budget_seen_[b] = seen; budget_dropped_[b] = dropped + sel_drop;
      slot_seen[stage_slot]++;
      if (sel_drop) slot_dropped[stage_slot]++;
    } else if (!v.grad_data) {
      sel_drop = eligible && depth > drop_threshold;
    }
    if (sel_drop) queue_selective_drops[port * kPriorities + v.prio]++;
    v.drop = sel_drop;
    return v;
  }

  // Egress at enqueue: PCN state, then whether to mark CE (depth = this queue's before the packet).
  bool ShouldMark(uint32_t port, const Verdict& v, const ns3::Ipv4Header& ip, uint32_t depth) {
    uint32_t threshold = PcnUpdate(port, v, ip);
    if (ip.GetEcn() == ns3::Ipv4Header::ECN_NotECT) return false;
    if (depth <= threshold) return false;
    queue_marked[port * kPriorities + v.prio]++;
    if (v.slot >= 0 && v.has_grad) slot_marked[v.slot]++;
    return true;
  }

  void Transmitted(uint32_t port, uint32_t prio) { queue_tx[port * kPriorities + prio]++; }
  void TailDrop(uint32_t port, uint32_t prio) { queue_tail_drops[port * kPriorities + prio]++; }
  void Depth(uint32_t port, uint32_t prio, uint32_t depth) {
    uint32_t& m = queue_max_depth[port * kPriorities + prio];
    if (depth > m) m = depth;
  }
  uint32_t PcnPending(uint32_t port) const { return port < ports_ ? pcn_count_[port] : 0; }

  // Whether the job's gradient DATA is sprayed per packet (job_features; no entry = yes).
  bool Sprays(uint16_t job) const {
    for (const auto& f : features_) if (f.job == job) return f.spray;
    return true;
  }

  static bool ParseGradient(const ns3::Ipv4Header& ip, ns3::Ptr<const ns3::Packet> p, Gradient& g) {
    if (ip.GetProtocol() != 17 || p->GetSize() < 8 + 24) return false;
    uint8_t b[8 + 24];
    p->CopyData(b, sizeof b);
    if (((b[2] << 8) | b[3]) != kGradientPort) return false;
    const uint8_t* h = b + 8;
    g.kind = h[0] & 0x0F;
    g.flags = h[1];
    g.job = (h[2] << 8) | h[3];
    g.rank = (h[4] << 8) | h[5];
    g.layer = (h[6] << 8) | h[7];
    g.round = (uint32_t(h[8]) << 24) | (h[9] << 16) | (h[10] << 8) | h[11];
    g.mag = h[12];
    g.epoch = h[13];
    return true;
  }

 private:
  const ClassRule* MatchClass(const Gradient& g) const {
    const ClassRule* best = nullptr;
    for (const auto& r : class_rules_) {
      if ((g.job & r.job_mask) != (r.job_value & r.job_mask)) continue;
      if (g.layer < r.layer_lo || g.layer > r.layer_hi) continue;
      if (g.mag < r.mag_lo || g.mag > r.mag_hi) continue;
      if ((g.epoch & r.epoch_mask) != (r.epoch_value & r.epoch_mask)) continue;
      if (!best || r.entry_priority > best->entry_priority) best = &r;
    }
    return best;
  }

  const DdlFlowRule* MatchDdlFlow(const ns3::Ipv4Header& ip, ns3::Ptr<const ns3::Packet> p) const {
    if (ddl_flows_.empty()) return nullptr;
    uint32_t dport = 0;   // meta.l4_dst: TCP's or UDP's destination port, else 0
    uint8_t proto = ip.GetProtocol();
    if ((proto == 6 && p->GetSize() >= 20) || (proto == 17 && p->GetSize() >= 8)) {
      uint8_t b[4];
      p->CopyData(b, sizeof b);
      dport = (b[2] << 8) | b[3];
    }
    uint32_t src = ip.GetSource().Get(), dst = ip.GetDestination().Get();
    const DdlFlowRule* best = nullptr;
    for (const auto& r : ddl_flows_) {
      if ((src & r.src_mask) != (r.src_value & r.src_mask)) continue;
      if ((dst & r.dst_mask) != (r.dst_value & r.dst_mask)) continue;
      if ((proto & r.proto_mask) != (r.proto_value & r.proto_mask)) continue;
      if (dport < r.port_lo || dport > r.port_hi) continue;
      if (!best || r.entry_priority > best->entry_priority) best = &r;
    }
    return best;
  }

  const DscpRule* MatchDscp(uint32_t dscp) const {
    const DscpRule* best = nullptr;
    for (const auto& r : dscp_rules_)
      if ((dscp & r.mask) == (r.value & r.mask) && (!best || r.entry_priority > best->entry_priority)) best = &r;
    return best;
  }

  // PCN per egress port (p4src/egress.p4 pcn_update, per port and (job, worker) sender):
  // a START (TOS bit 7 on a gradient packet) counts once per sender and round; the first push
  // DATA of a counted sender's round is its arrival, and so is the first packet of one of the
  // sender's ddl_flow flows while its START is pending; the count expires 2 s after the last START.
  uint32_t PcnUpdate(uint32_t port, const Verdict& v, const ns3::Ipv4Header& ip) {
    uint64_t now = ns3::Simulator::Now().GetMicroSeconds();
    uint32_t& count = pcn_count_[port];
    uint32_t& thr = pcn_threshold_[port];
    if (count != 0 && now > pcn_deadline_[port]) {
      count = 0;
      pcn_expired[port]++;
      for (auto it = senders_.begin(); it != senders_.end();)
        it = (it->first >> 32) == port ? senders_.erase(it) : std::next(it);
    }
    if (v.has_grad) {
      const Gradient& g = v.g;
      uint64_t key = (uint64_t(port) << 32) | (uint32_t(g.job) << 16) | g.rank;
      Sender& s = senders_[key];
      uint32_t round1 = g.round + 1;
      uint32_t tos = ip.GetTos();
      bool start = (tos >> 2) & 0x20;
      bool pending = s.started != 0 && s.arrived != s.started;
      bool fresh = start && s.started != round1;
      if (start) {
        uint32_t carried = ((tos >> 2) & 0x0F) * 5;
        uint32_t job_thr = 0;
        for (const auto& j : pcn_jobs_) if (j.first == g.job) job_thr = j.second;
        uint32_t offered = job_thr ? job_thr : (carried ? carried : ecn_pcn_[port]);
        thr = (count != 0 && thr < offered) ? thr : offered;
      }
      if (fresh) {
        if (!pending) count++;
        pcn_deadline_[port] = now + kPcnExpiryUs;
        s.started = round1;
        pcn_start[port]++;
      }
      bool arrival = v.grad_data && !(g.flags & kFlagPull) && count != 0 && s.started == round1 &&
                     s.arrived != round1;
      if (arrival) { count--; s.arrived = round1; pcn_arrival[port]++; }
    } else if (v.ddl) {
      uint64_t key = (uint64_t(port) << 32) | (uint32_t(v.ddl->job) << 16) | v.ddl->rank;
      auto it = senders_.find(key);
      if (it != senders_.end() && count != 0 && it->second.started != 0 &&
          it->second.arrived != it->second.started) {
        count--; it->second.arrived = it->second.started; pcn_arrival[port]++;
      }
    }
    return count != 0 ? thr : ecn_normal_[port];
  }

  struct Sender { uint32_t started = 0, arrived = 0; };

  uint32_t ports_;
  std::vector<ClassRule> class_rules_;
  std::vector<DscpRule> dscp_rules_;
  std::vector<JobFeatures> features_;
  std::vector<std::pair<uint32_t, uint32_t>> pcn_jobs_;
  std::vector<DdlFlowRule> ddl_flows_;
  std::vector<uint32_t> budget_round_;
  std::vector<uint64_t> budget_seen_, budget_dropped_;
  std::vector<uint32_t> ecn_normal_, ecn_pcn_;
  std::vector<uint32_t> pcn_count_, pcn_threshold_;
  std::vector<uint64_t> pcn_deadline_;
  std::vector<bool> mark_on_port_;
  std::unordered_map<uint64_t, Sender> senders_;
};

// The UDP header and gradient header of a packet as raw bytes, to rewrite telemetry in place.
class GradientBytes : public ns3::Header {
 public:
  static constexpr uint32_t kSize = 8 + 32;
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("gradlane_sim::GradientBytes")
                                 .SetParent<ns3::Header>()
                                 .AddConstructor<GradientBytes>();
    return tid;
  }
  ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  uint32_t GetSerializedSize() const override { return kSize; }
  void Serialize(ns3::Buffer::Iterator it) const override { it.Write(bytes.data(), kSize); }
  uint32_t Deserialize(ns3::Buffer::Iterator it) override { it.Read(bytes.data(), kSize); return kSize; }
  void Print(std::ostream& os) const override { os << "gradient bytes"; }

  // p4src/egress.p4 stamp_telemetry: max enqueue depth, hop count, summed queueing delay;
  // the UDP checksum becomes 0.
  static void Stamp(ns3::Ptr<ns3::Packet> p, uint32_t enq_depth, uint32_t delay_us) {
    GradientBytes h;
    p->RemoveHeader(h);
    uint8_t* u = h.bytes.data();
    uint8_t* g = u + 8;
    uint32_t depth = std::min<uint32_t>(enq_depth, 0xFFFF);
    if (depth > uint32_t((g[24] << 8) | g[25])) { g[24] = depth >> 8; g[25] = depth & 0xFF; }
    uint32_t hops = ((g[26] << 8) | g[27]) + 1;
    g[26] = (hops >> 8) & 0xFF; g[27] = hops & 0xFF;
    uint32_t delay = ((uint32_t(g[28]) << 24) | (g[29] << 16) | (g[30] << 8) | g[31]) + delay_us;
    g[28] = delay >> 24; g[29] = (delay >> 16) & 0xFF; g[30] = (delay >> 8) & 0xFF; g[31] = delay & 0xFF;
    u[6] = u[7] = 0;
    p->AddHeader(h);
  }

  std::array<uint8_t, kSize> bytes{};
};

// The egress queues of one switch port: 8 strict-priority FIFOs of `depth` packets each
// (BMv2's per-priority queue depth), fed by SwitchState's verdicts.
class PortQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("gradlane_sim::PortQueueDisc")
                                 .SetParent<ns3::QueueDisc>()
                                 .AddConstructor<PortQueueDisc>();
    return tid;
  }
  PortQueueDisc() : ns3::QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {}

  void Configure(SwitchState* state, uint32_t port, uint32_t depth) {
    state_ = state; port_ = port; depth_ = depth;
  }

  // Packets now in priority queue `prio`.
  uint32_t Depth(uint32_t prio) const { return GetInternalQueue(prio)->GetNPackets(); }

 private:
  bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override {
    auto ipItem = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
    std::vector<uint32_t> depths(kPriorities);
    for (uint32_t i = 0; i < kPriorities; i++) depths[i] = GetInternalQueue(i)->GetNPackets();
    if (!ipItem) {   // not IPv4: the lowest queue, never marked
      if (depths[0] >= depth_) { state_->TailDrop(port_, 0); DropBeforeEnqueue(item, "tail"); return false; }
      if (!GetInternalQueue(0)->Enqueue(item)) return false;
      stamp_[0].push_back(-1);
      return true;
    }
    const ns3::Ipv4Header& ip = ipItem->GetHeader();
    auto v = state_->Ingress(port_, ip, item->GetPacket(), depths);
    if (v.drop) { DropBeforeEnqueue(item, "selective"); return false; }
    uint32_t d = depths[v.prio];
    if (d >= depth_) { state_->TailDrop(port_, v.prio); DropBeforeEnqueue(item, "tail"); return false; }
    uint32_t marking_depth = d;
    if (state_->MarkOnPortOccupancy(port_))
      for (uint32_t i = 0; i < kPriorities; i++) if (i != v.prio) marking_depth += depths[i];
    if (state_->ShouldMark(port_, v, ip, marking_depth)) Mark(item, "ecn");
    state_->Depth(port_, v.prio, d + 1);
    if (!GetInternalQueue(v.prio)->Enqueue(item)) return false;
    // what egress needs at dequeue: telemetry for gradient DATA, with the enqueue depth
    stamp_[v.prio].push_back(v.grad_data ? int64_t(d) : -1);
    return true;
  }

  ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override {
    for (int p = kPriorities - 1; p >= 0; p--) {
      auto item = GetInternalQueue(p)->Dequeue();
      if (!item) continue;
      state_->Transmitted(port_, p);
      int64_t depth = stamp_[p].front();
      stamp_[p].pop_front();
      if (depth >= 0) {
        auto delay = ns3::Simulator::Now() - item->GetTimeStamp();
        GradientBytes::Stamp(item->GetPacket(), uint32_t(depth), uint32_t(delay.GetMicroSeconds()));
      }
      return item;
    }
    return nullptr;
  }

  bool CheckConfig() override {
    if (GetNInternalQueues() == 0)
      for (uint32_t i = 0; i < kPriorities; i++)
        AddInternalQueue(ns3::CreateObjectWithAttributes<ns3::DropTailQueue<ns3::QueueDiscItem>>(
            "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("1000000p"))));
    return state_ != nullptr;
  }
  void InitializeParams() override {}

  SwitchState* state_ = nullptr;
  std::array<std::deque<int64_t>, kPriorities> stamp_;   // per queued packet: enqueue depth, -1 = no telemetry
  uint32_t port_ = 0;
  uint32_t depth_ = 64;
};

// Samples, every `interval_s`, the depth of priority queue `prio` of some ports and the bytes
// some packet sinks received (queue-depth telemetry over time, as the emulation's Thrift sampler).
class QueueProbe {
 public:
  explicit QueueProbe(double interval_s) : interval_(ns3::Seconds(interval_s)) {}
  void AddQueue(ns3::Ptr<PortQueueDisc> q, uint32_t prio) { queues_.push_back({q, prio}); }
  void AddSink(ns3::Ptr<ns3::Application> app) { sinks_.push_back(ns3::DynamicCast<ns3::PacketSink>(app)); }
  void Start(double at_s, double until_s) {
    until_ = ns3::Seconds(until_s);
    ns3::Simulator::Schedule(ns3::Seconds(at_s), &QueueProbe::Sample, this);
  }

  std::vector<double> times;
  std::vector<uint32_t> depths;        // per sample, one per queue in AddQueue order
  std::vector<uint64_t> sink_bytes;    // per sample, the sum over the sinks

 private:
  void Sample() {
    times.push_back(ns3::Simulator::Now().GetSeconds());
    for (auto& [q, prio] : queues_) depths.push_back(q->Depth(prio));
    uint64_t total = 0;
    for (auto& s : sinks_) total += s->GetTotalRx();
    sink_bytes.push_back(total);
    if (ns3::Simulator::Now() + interval_ <= until_) ns3::Simulator::Schedule(interval_, &QueueProbe::Sample, this);
  }

  ns3::Time interval_, until_;
  std::vector<std::pair<ns3::Ptr<PortQueueDisc>, uint32_t>> queues_;
  std::vector<ns3::Ptr<ns3::PacketSink>> sinks_;
};

}  // namespace gradlane_sim
