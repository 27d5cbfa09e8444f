// Traffic for gradlane's simulations, in C++ so that no Python runs per packet:
// TcpRounds (a parameter-server job over TCP: every round each worker pushes its gradient, the
// PS answers each with the parameters once all pushes are in), TcpBursts (a worker's DDL push
// bursts of a fixed byte count over one kept TCP connection, each timed until every byte is
// acknowledged), DatagramSender (UDP datagrams
// whose bytes and TOS Python gives, e.g. gradient packets) and DatagramSink (what arrived, in
// order, with the TOS byte as received).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ns3/inet-socket-address.h"
#include "ns3/ipv4.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/random-variable-stream.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/udp-socket-factory.h"

namespace gradlane_sim {

// A push/pull training job over TCP: one connection per worker to the PS, kept for all rounds.
// Round r is ready when every worker has its round r-1 pull (plus `compute` time); each worker
// then starts its push after its own delay, drawn uniformly from [0, jitter) from ns-3's random
// streams (so the seed and run number fix it). Round r starts with the first push and ends when
// the last worker has its round r pull; round_start/round_end hold the times in seconds, and
// push_end the time the PS had every push of the round (the push stage ends, the pull begins);
// push_fct each worker's push, from its start until the PS had all of it (DLCP's gradient FCT).
// With `serial`, the job runs as the loss-tolerant agents' does with --pull-schedule serial: no
// barrier (each worker starts its next push, after `compute` and its delay, once it has its own
// pull) and the PS hands the pull to one worker's connection after another in worker order, the
// next once the previous one's bytes are all in its socket, so a worker's next push overlaps the
// later workers' pulls.
class TcpRounds {
 public:
  TcpRounds(ns3::Ptr<ns3::Node> ps, ns3::Ipv4Address ps_addr, uint16_t port, uint64_t push_bytes,
            uint64_t pull_bytes, uint32_t rounds, double compute_s, double jitter_s,
            bool serial = false)
      : ps_(ps), ps_addr_(ps_addr), port_(port), push_(push_bytes), pull_(pull_bytes),
        rounds_(rounds), compute_(ns3::Seconds(compute_s)), jitter_s_(jitter_s),
        jitter_(ns3::CreateObject<ns3::UniformRandomVariable>()), serial_(serial) {}

  void AddWorker(ns3::Ptr<ns3::Node> node) { worker_nodes_.push_back(node); }

  void Start(double at_s) {
    listener_ = ns3::Socket::CreateSocket(ps_, ns3::TcpSocketFactory::GetTypeId());
    listener_->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port_));
    listener_->Listen();
    listener_->SetAcceptCallback(ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
                                 ns3::MakeCallback(&TcpRounds::OnAccept, this));
    ns3::Simulator::Schedule(ns3::Seconds(at_s), &TcpRounds::Connect, this);
  }

  std::vector<double> round_start, round_end, push_end, push_fct;
  uint32_t RoundsDone() const { return round_end.size(); }
  bool Finished() const { return round_end.size() == rounds_; }

 private:
  struct Flow {
    ns3::Ptr<ns3::Socket> sock;
    uint64_t to_send = 0;
    uint64_t received = 0;
    size_t worker = 0;            // at the PS: whose push this connection carries
  };

  void Connect() {
    for (auto& node : worker_nodes_) {
      Flow f;
      f.sock = ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId());
      f.sock->Bind();
      ns3::Address local;
      f.sock->GetSockName(local);
      origin_.push_back({node->GetObject<ns3::Ipv4>()->GetAddress(1, 0).GetLocal().Get(),
                         ns3::InetSocketAddress::ConvertFrom(local).GetPort()});
      push_at_.push_back(0.0);
      f.sock->SetConnectCallback(ns3::MakeCallback(&TcpRounds::OnConnected, this),
                                 ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>());
      f.sock->SetRecvCallback(ns3::MakeCallback(&TcpRounds::OnWorkerRecv, this));
      f.sock->SetSendCallback(ns3::MakeCallback(&TcpRounds::OnSendSpace, this));
      f.sock->Connect(ns3::InetSocketAddress(ps_addr_, port_));
      workers_.push_back(f);
    }
  }

  void OnConnected(ns3::Ptr<ns3::Socket>) {
    if (++connected_ < workers_.size()) return;
    if (!serial_) { StartRound(); return; }
    pushes_in_.assign(workers_.size(), 0);
    pulls_in_.assign(workers_.size(), 0);
    for (size_t i = 0; i < workers_.size(); i++) SchedulePush(i, ns3::Seconds(0));
  }

  // serial: worker i's next push after `after` plus its own delay
  void SchedulePush(size_t worker, ns3::Time after) {
    double delay = jitter_s_ > 0 ? jitter_->GetValue(0.0, jitter_s_) : 0.0;
    ns3::Simulator::Schedule(after + ns3::Seconds(delay), &TcpRounds::PushNext, this, worker);
  }

  void PushNext(size_t worker) {
    uint32_t round = pushes_started_[worker]++;
    if (round_start.size() == round) round_start.push_back(ns3::Simulator::Now().GetSeconds());
    push_at_[worker] = ns3::Simulator::Now().GetSeconds();
    workers_[worker].to_send += push_;
    Pump(workers_[worker]);
  }

  // serial: the PS has every push of round `pull_round_`: queue its pull worker by worker
  void MaybePull() {
    if (pull_round_ >= rounds_ || !pull_queue_.empty()) return;
    for (auto n : pushes_in_) if (n <= pull_round_) return;
    push_end.push_back(ns3::Simulator::Now().GetSeconds());
    for (size_t w = 0; w < workers_.size(); w++) pull_queue_.push_back(w);
    pull_round_++;
    PumpPullQueue();
  }

  Flow* PsFlowOf(size_t worker) {
    for (auto& a : accepted_) if (a.worker == worker) return &a;
    return nullptr;
  }

  // serial: hand the head worker's pull to its socket; the next one once all of it is in
  void PumpPullQueue() {
    while (!pull_queue_.empty()) {
      Flow* f = PsFlowOf(pull_queue_.front());
      if (!f) { pull_queue_.erase(pull_queue_.begin()); continue; }
      if (!pull_head_given_) { f->to_send += pull_; pull_head_given_ = true; }
      Pump(*f);
      if (f->to_send > 0) return;
      pull_queue_.erase(pull_queue_.begin());
      pull_head_given_ = false;
    }
    MaybePull();
  }

  void OnAccept(ns3::Ptr<ns3::Socket> s, const ns3::Address& from) {
    Flow f;
    f.sock = s;
    auto inet = ns3::InetSocketAddress::ConvertFrom(from);
    std::pair<uint32_t, uint16_t> key{inet.GetIpv4().Get(), inet.GetPort()};
    while (f.worker < origin_.size() && origin_[f.worker] != key) f.worker++;
    s->SetRecvCallback(ns3::MakeCallback(&TcpRounds::OnPsRecv, this));
    s->SetSendCallback(ns3::MakeCallback(&TcpRounds::OnSendSpace, this));
    accepted_.push_back(f);
  }

  void StartRound() {
    pushed_ = 0;
    pulled_ = 0;
    started_ = false;
    for (size_t i = 0; i < workers_.size(); i++) {
      double delay = jitter_s_ > 0 ? jitter_->GetValue(0.0, jitter_s_) : 0.0;
      ns3::Simulator::Schedule(ns3::Seconds(delay), &TcpRounds::Push, this, i);
    }
  }

  void Push(size_t worker) {
    if (!started_) {
      round_start.push_back(ns3::Simulator::Now().GetSeconds());
      started_ = true;
    }
    push_at_[worker] = ns3::Simulator::Now().GetSeconds();
    workers_[worker].to_send += push_;
    Pump(workers_[worker]);
  }

  static Flow* Find(std::vector<Flow>& flows, ns3::Ptr<ns3::Socket> s) {
    for (auto& f : flows) if (f.sock == s) return &f;
    return nullptr;
  }

  void Pump(Flow& f) {
    while (f.to_send > 0) {
      uint32_t room = f.sock->GetTxAvailable();
      if (room == 0) return;
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({f.to_send, room, 65536}));
      int sent = f.sock->Send(ns3::Create<ns3::Packet>(n));
      if (sent <= 0) return;
      f.to_send -= sent;
    }
  }

  void OnSendSpace(ns3::Ptr<ns3::Socket> s, uint32_t) {
    Flow* f = Find(workers_, s);
    if (!f) f = Find(accepted_, s);
    if (f) Pump(*f);
    if (serial_ && f && !pull_queue_.empty() && f == PsFlowOf(pull_queue_.front())) PumpPullQueue();
  }

  static uint64_t Drain(ns3::Ptr<ns3::Socket> s) {
    uint64_t n = 0;
    while (auto p = s->Recv()) {
      if (p->GetSize() == 0) break;
      n += p->GetSize();
    }
    return n;
  }

  void OnPsRecv(ns3::Ptr<ns3::Socket> s) {
    Flow* f = Find(accepted_, s);
    if (!f) return;
    if (serial_) {
      f->received += Drain(s);
      if (f->worker >= pushes_in_.size()) return;
      while (f->received >= push_ * (pushes_in_[f->worker] + 1)) {
        pushes_in_[f->worker]++;
        push_fct.push_back(ns3::Simulator::Now().GetSeconds() - push_at_[f->worker]);
      }
      MaybePull();
      return;
    }
    uint64_t round = round_start.size();
    bool before = f->received >= push_ * round;
    f->received += Drain(s);
    bool now_done = !before && f->received >= push_ * round;
    if (now_done && f->worker < push_at_.size())
      push_fct.push_back(ns3::Simulator::Now().GetSeconds() - push_at_[f->worker]);
    if (now_done && ++pushed_ == accepted_.size() &&
        accepted_.size() == workers_.size()) {
      push_end.push_back(ns3::Simulator::Now().GetSeconds());
      for (auto& a : accepted_) { a.to_send += pull_; Pump(a); }
    }
  }

  void OnWorkerRecv(ns3::Ptr<ns3::Socket> s) {
    Flow* f = Find(workers_, s);
    if (!f) return;
    if (serial_) {
      size_t w = static_cast<size_t>(f - workers_.data());
      f->received += Drain(s);
      while (f->received >= pull_ * (pulls_in_[w] + 1)) {
        uint32_t round = pulls_in_[w]++;
        if (++pulled_of_[round] == workers_.size())
          round_end.push_back(ns3::Simulator::Now().GetSeconds());
        if (pulls_in_[w] < rounds_) SchedulePush(w, compute_);
      }
      return;
    }
    uint64_t round = round_start.size();
    bool before = f->received >= pull_ * round;
    f->received += Drain(s);
    if (!before && f->received >= pull_ * round && ++pulled_ == workers_.size()) {
      round_end.push_back(ns3::Simulator::Now().GetSeconds());
      if (round_end.size() < rounds_) ns3::Simulator::Schedule(compute_, &TcpRounds::StartRound, this);
    }
  }

  ns3::Ptr<ns3::Node> ps_;
  ns3::Ipv4Address ps_addr_;
  uint16_t port_;
  uint64_t push_, pull_;
  uint32_t rounds_;
  ns3::Time compute_;
  double jitter_s_;
  ns3::Ptr<ns3::UniformRandomVariable> jitter_;
  bool started_ = false;
  std::vector<ns3::Ptr<ns3::Node>> worker_nodes_;
  ns3::Ptr<ns3::Socket> listener_;
  std::vector<Flow> workers_, accepted_;
  std::vector<std::pair<uint32_t, uint16_t>> origin_;   // per worker: its address and port
  std::vector<double> push_at_;                         // per worker: its push's start this round
  uint32_t connected_ = 0, pushed_ = 0, pulled_ = 0;
  // serial: per worker the pushes started, pushes the PS has whole and pulls it has whole; the
  // workers of the round being pulled still to hand their pull, per round the workers pulled
  bool serial_;
  std::map<size_t, uint32_t> pushes_started_;
  std::vector<uint32_t> pushes_in_, pulls_in_;
  std::vector<size_t> pull_queue_;
  bool pull_head_given_ = false;
  uint32_t pull_round_ = 0;
  std::map<uint32_t, size_t> pulled_of_;
};

// One worker's DDL bursts (the PCN experiment): one TCP connection from `node` to the PS's
// `port`, made at Start and kept; burst i hands `bytes` to the socket at its time and is done
// when the socket's send buffer is empty again (every byte acknowledged: ns-3's TCP keeps a
// byte in its send buffer until it is acknowledged), checked every `poll_s`. The worker's TCP
// is `socket_type` (e.g. ns3::TcpCubic); the PS drains what arrives. first/done hold seconds.
class TcpBursts {
 public:
  TcpBursts(ns3::Ptr<ns3::Node> node, ns3::Ptr<ns3::Node> ps, ns3::Ipv4Address ps_addr,
            uint16_t port, const std::string& socket_type, double poll_s)
      : node_(node), ps_(ps), ps_addr_(ps_addr), port_(port), type_(socket_type),
        poll_(ns3::Seconds(poll_s)) {}

  void Add(double at_s, uint64_t bytes) { at_.push_back(at_s); bytes_.push_back(bytes); }

  void Start(double connect_s) {
    listener_ = ns3::Socket::CreateSocket(ps_, ns3::TcpSocketFactory::GetTypeId());
    listener_->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port_));
    listener_->Listen();
    listener_->SetAcceptCallback(ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
                                 ns3::MakeCallback(&TcpBursts::OnAccept, this));
    ns3::Simulator::Schedule(ns3::Seconds(connect_s), &TcpBursts::Connect, this);
    for (size_t i = 0; i < at_.size(); i++)
      ns3::Simulator::Schedule(ns3::Seconds(at_[i]), &TcpBursts::Ready, this, i);
  }

  std::vector<double> first, done;
  uint64_t received = 0;

 private:
  void Connect() {
    node_->GetObject<ns3::TcpL4Protocol>()->SetAttribute(
        "SocketType", ns3::TypeIdValue(ns3::TypeId::LookupByName(type_)));
    sock_ = ns3::Socket::CreateSocket(node_, ns3::TcpSocketFactory::GetTypeId());
    sock_->Bind();
    sock_->SetSendCallback(ns3::MakeCallback(&TcpBursts::OnSendSpace, this));
    sock_->Connect(ns3::InetSocketAddress(ps_addr_, port_));
    empty_ = sock_->GetTxAvailable();
  }

  void OnAccept(ns3::Ptr<ns3::Socket> s, const ns3::Address&) {
    s->SetRecvCallback(ns3::MakeCallback(&TcpBursts::OnPsRecv, this));
    accepted_.push_back(s);
  }

  void OnPsRecv(ns3::Ptr<ns3::Socket> s) {
    while (auto p = s->Recv()) {
      if (p->GetSize() == 0) break;
      received += p->GetSize();
    }
  }

  // A burst still running at the next one's time queues the next behind it (as the emulation's
  // worker does: it sends the next burst once the last one is acknowledged).
  void Ready(size_t i) {
    pending_.push_back(i);
    if (pending_.size() == 1) Begin();
  }

  void Begin() {
    first.push_back(ns3::Simulator::Now().GetSeconds());
    to_send_ = bytes_[pending_.front()];
    Pump();
    ns3::Simulator::Schedule(poll_, &TcpBursts::Poll, this);
  }

  void Pump() {
    while (to_send_ > 0) {
      uint32_t room = sock_->GetTxAvailable();
      if (room == 0) return;
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({to_send_, room, 65536}));
      int sent = sock_->Send(ns3::Create<ns3::Packet>(n));
      if (sent <= 0) return;
      to_send_ -= sent;
    }
  }

  void OnSendSpace(ns3::Ptr<ns3::Socket>, uint32_t) { if (!pending_.empty()) Pump(); }

  void Poll() {
    if (to_send_ > 0 || sock_->GetTxAvailable() < empty_) {
      ns3::Simulator::Schedule(poll_, &TcpBursts::Poll, this);
      return;
    }
    done.push_back(ns3::Simulator::Now().GetSeconds());
    pending_.erase(pending_.begin());
    if (!pending_.empty()) Begin();
  }

  ns3::Ptr<ns3::Node> node_, ps_;
  ns3::Ipv4Address ps_addr_;
  uint16_t port_;
  std::string type_;
  ns3::Time poll_;
  std::vector<double> at_;
  std::vector<uint64_t> bytes_;
  std::vector<size_t> pending_;
  uint64_t to_send_ = 0;
  uint32_t empty_ = 0;
  ns3::Ptr<ns3::Socket> sock_, listener_;
  std::vector<ns3::Ptr<ns3::Socket>> accepted_;
};

// UDP datagrams with given bytes and TOS, sent at given times from one node to one address.
class DatagramSender {
 public:
  DatagramSender(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address dst, uint16_t port) {
    sock_ = ns3::Socket::CreateSocket(node, ns3::UdpSocketFactory::GetTypeId());
    sock_->Bind();
    sock_->Connect(ns3::InetSocketAddress(dst, port));
  }

  void Add(double at_s, const std::string& bytes, uint8_t tos) {
    ns3::Simulator::Schedule(ns3::Seconds(at_s), &DatagramSender::Send, this, bytes, tos);
  }

  uint64_t sent = 0;

 private:
  void Send(std::string bytes, uint8_t tos) {
    sock_->SetIpTos(tos);
    auto p = ns3::Create<ns3::Packet>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (sock_->Send(p) >= 0) sent++;
  }

  ns3::Ptr<ns3::Socket> sock_;
};

// What arrived at one UDP port: per datagram the arrival time, its first bytes and its TOS.
class DatagramSink {
 public:
  DatagramSink(ns3::Ptr<ns3::Node> node, uint16_t port, uint32_t keep_bytes) : keep_(keep_bytes) {
    sock_ = ns3::Socket::CreateSocket(node, ns3::UdpSocketFactory::GetTypeId());
    sock_->SetIpRecvTos(true);
    sock_->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
    sock_->SetRecvCallback(ns3::MakeCallback(&DatagramSink::OnRecv, this));
  }

  std::vector<double> times;
  std::vector<std::string> heads;
  std::vector<uint32_t> tos;   // uint32_t: cppyy reads a vector of uint8_t as text

 private:
  void OnRecv(ns3::Ptr<ns3::Socket> s) {
    while (auto p = s->Recv()) {
      if (p->GetSize() == 0) break;
      std::string head(std::min(keep_, p->GetSize()), '\0');
      p->CopyData(reinterpret_cast<uint8_t*>(&head[0]), head.size());
      ns3::SocketIpTosTag tag;
      tos.push_back(p->RemovePacketTag(tag) ? tag.GetTos() : 0);
      times.push_back(ns3::Simulator::Now().GetSeconds());
      heads.push_back(head);
    }
  }

  uint32_t keep_;
  ns3::Ptr<ns3::Socket> sock_;
};

}  // namespace gradlane_sim
