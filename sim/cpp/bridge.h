// UDP sockets whose datagrams a Python driver reads and writes (sim/lossy.py drives gradlane's
// sans-IO transport with them). Every datagram that arrives is queued (host, source address and
// port, TOS byte as received, bytes) and the running simulation pauses once the current instant's
// events are done (Simulator::Stop), so the driver handles it at its simulated arrival time;
// WakeAt(t) pauses it at time t (the driver's next timer). Sending puts the bytes on the host's
// socket with the given TOS at once.
// Host software time (SetServiceTime, off unless set): each host is then one serial server that
// spends a fixed time on every datagram it receives (before the driver sees it) and on every one
// it sends (before it reaches the socket), in arrival order, as the single-threaded Python agent
// does; a datagram waits while the host is busy with earlier ones.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ns3/event-id.h"
#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"

namespace gradlane_sim {

class UdpBridge {
 public:
  // A UDP socket on `node` bound to `port`; its index for Send and in_host.
  uint32_t AddHost(ns3::Ptr<ns3::Node> node, uint16_t port) {
    auto sock = ns3::Socket::CreateSocket(node, ns3::UdpSocketFactory::GetTypeId());
    sock->SetIpRecvTos(true);
    sock->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
    sock->SetRecvCallback(ns3::MakeCallback(&UdpBridge::OnRecv, this));
    socks_.push_back(sock);
    tos_.push_back(-1);
    rx_ns_.push_back(0);
    tx_ns_.push_back(0);
    busy_until_ns_.push_back(0);
    return socks_.size() - 1;
  }

  // The host's software time per received and per sent datagram, in seconds (0, 0: none).
  void SetServiceTime(uint32_t host, double rx_s, double tx_s) {
    rx_ns_.at(host) = static_cast<int64_t>(std::llround(rx_s * 1e9));
    tx_ns_.at(host) = static_cast<int64_t>(std::llround(tx_s * 1e9));
  }

  void Send(uint32_t host, const std::string& bytes, ns3::Ipv4Address dst, uint16_t port, uint8_t tos) {
    auto p = ns3::Create<ns3::Packet>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    int64_t ready = Serve(host, tx_ns_.at(host));
    if (ready < 0) {
      SendNow(host, p, dst, port, tos);
      return;
    }
    ns3::Simulator::Schedule(ns3::NanoSeconds(ready - ns3::Simulator::Now().GetNanoSeconds()),
                             &UdpBridge::SendNow, this, host, p, dst, port, tos);
  }

  // Pause the simulation at absolute time `at_s`, rounded up to ns-3's nanosecond (replaces the
  // previous wake); `woke` tells that this pause came from the wake, not from an arrival.
  void WakeAt(double at_s) {
    ns3::Simulator::Cancel(wake_);
    woke = false;
    int64_t delay = static_cast<int64_t>(std::ceil(at_s * 1e9)) - ns3::Simulator::Now().GetNanoSeconds();
    wake_ = ns3::Simulator::Schedule(ns3::NanoSeconds(delay > 0 ? delay : 0), &UdpBridge::Wake, this);
  }

  void Clear() {
    in_host.clear();
    in_src.clear();
    in_port.clear();
    in_tos.clear();
    in_data.clear();
  }

  std::vector<uint32_t> in_host, in_src, in_port, in_tos;   // uint32_t: cppyy reads uint8_t as text
  std::vector<std::string> in_data;
  uint64_t sent = 0, send_errors = 0, received = 0;
  bool woke = false;

 private:
  void Pause() {
    pause_pending_ = false;
    ns3::Simulator::Stop();
  }

  void Wake() {
    woke = true;
    ns3::Simulator::Stop();
  }

  // With a service time: the time (ns) the host is done with one more datagram, and busy until
  // then; without: -1 (at once).
  int64_t Serve(uint32_t host, int64_t service_ns) {
    if (service_ns <= 0) return -1;
    int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    int64_t start = busy_until_ns_[host] > now ? busy_until_ns_[host] : now;
    busy_until_ns_[host] = start + service_ns;
    return busy_until_ns_[host];
  }

  void SendNow(uint32_t host, ns3::Ptr<ns3::Packet> p, ns3::Ipv4Address dst, uint16_t port, uint8_t tos) {
    auto& sock = socks_.at(host);
    if (tos_[host] != tos) {
      sock->SetIpTos(tos);
      tos_[host] = tos;
    }
    if (sock->SendTo(p, 0, ns3::InetSocketAddress(dst, port)) >= 0) sent++;
    else send_errors++;
  }

  void Deliver(uint32_t host, uint32_t src, uint32_t port, uint32_t tos, const std::string& data) {
    in_tos.push_back(tos);
    in_host.push_back(host);
    in_src.push_back(src);
    in_port.push_back(port);
    in_data.push_back(data);
    received++;
    if (!pause_pending_) {
      pause_pending_ = true;
      ns3::Simulator::ScheduleNow(&UdpBridge::Pause, this);
    }
  }

  void OnRecv(ns3::Ptr<ns3::Socket> s) {
    uint32_t host = 0;
    while (host < socks_.size() && socks_[host] != s) host++;
    ns3::Address from;
    while (auto p = s->RecvFrom(from)) {
      if (p->GetSize() == 0) break;
      std::string data(p->GetSize(), '\0');
      p->CopyData(reinterpret_cast<uint8_t*>(&data[0]), data.size());
      ns3::SocketIpTosTag tag;
      uint32_t tos = p->RemovePacketTag(tag) ? tag.GetTos() : 0;
      auto inet = ns3::InetSocketAddress::ConvertFrom(from);
      int64_t ready = Serve(host, rx_ns_[host]);
      if (ready < 0) {
        Deliver(host, inet.GetIpv4().Get(), inet.GetPort(), tos, data);
      } else {
        ns3::Simulator::Schedule(ns3::NanoSeconds(ready - ns3::Simulator::Now().GetNanoSeconds()),
                                 &UdpBridge::Deliver, this, host, inet.GetIpv4().Get(),
                                 static_cast<uint32_t>(inet.GetPort()), tos, data);
      }
    }
  }

  std::vector<ns3::Ptr<ns3::Socket>> socks_;
  std::vector<int> tos_;
  std::vector<int64_t> rx_ns_, tx_ns_, busy_until_ns_;   // SetServiceTime, and when each host is free
  ns3::EventId wake_;
  bool pause_pending_ = false;
};

}  // namespace gradlane_sim
