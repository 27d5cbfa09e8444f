// UDP sockets whose datagrams a Python driver reads and writes (sim/lossy.py drives gradlane's
// sans-IO transport with them). Every datagram that arrives is queued (host, source address and
// port, TOS byte as received, bytes) and the running simulation pauses once the current instant's
// events are done (Simulator::Stop), so the driver handles it at its simulated arrival time;
// WakeAt(t) pauses it at time t (the driver's next timer). Sending puts the bytes on the host's
// socket with the given TOS at once.
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
    return socks_.size() - 1;
  }

  void Send(uint32_t host, const std::string& bytes, ns3::Ipv4Address dst, uint16_t port, uint8_t tos) {
    auto& sock = socks_.at(host);
    if (tos_[host] != tos) {
      sock->SetIpTos(tos);
      tos_[host] = tos;
    }
    auto p = ns3::Create<ns3::Packet>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (sock->SendTo(p, 0, ns3::InetSocketAddress(dst, port)) >= 0) sent++;
    else send_errors++;
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

  void OnRecv(ns3::Ptr<ns3::Socket> s) {
    uint32_t host = 0;
    while (host < socks_.size() && socks_[host] != s) host++;
    ns3::Address from;
    while (auto p = s->RecvFrom(from)) {
      if (p->GetSize() == 0) break;
      std::string data(p->GetSize(), '\0');
      p->CopyData(reinterpret_cast<uint8_t*>(&data[0]), data.size());
      ns3::SocketIpTosTag tag;
      in_tos.push_back(p->RemovePacketTag(tag) ? tag.GetTos() : 0);
      auto inet = ns3::InetSocketAddress::ConvertFrom(from);
      in_host.push_back(host);
      in_src.push_back(inet.GetIpv4().Get());
      in_port.push_back(inet.GetPort());
      in_data.push_back(std::move(data));
      received++;
    }
    if (!pause_pending_) {
      pause_pending_ = true;
      ns3::Simulator::ScheduleNow(&UdpBridge::Pause, this);
    }
  }

  std::vector<ns3::Ptr<ns3::Socket>> socks_;
  std::vector<int> tos_;
  ns3::EventId wake_;
  bool pause_pending_ = false;
};

}  // namespace gradlane_sim
