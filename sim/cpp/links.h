// Random loss on a link, as the topology's `loss_pct` asks: ns-3's RateErrorModel (per packet)
// on the receiving device of each impaired direction, and a count of what it dropped. Each
// model draws from its own numbered ns-3 stream (with automatic numbers the draws changed
// between simulations of one process), so the stream and the repetition's run number fix the
// draws; which packets meet them depends on the traffic (docs/ns3.md: lossy runs do not repeat
// exactly).
#pragma once
#include <cstdint>

#include "ns3/error-model.h"
#include "ns3/net-device.h"
#include "ns3/pointer.h"

namespace gradlane_sim {

class LinkLoss {
 public:
  // Drop each packet `dev` receives with probability `rate` (0..1), drawn from stream `stream`.
  void Attach(ns3::Ptr<ns3::NetDevice> dev, double rate, int64_t stream) {
    auto model = ns3::CreateObject<ns3::RateErrorModel>();
    model->SetUnit(ns3::RateErrorModel::ERROR_UNIT_PACKET);
    model->SetRate(rate);
    model->AssignStreams(stream);
    dev->SetAttribute("ReceiveErrorModel", ns3::PointerValue(model));
    dev->TraceConnectWithoutContext("PhyRxDrop", ns3::MakeCallback(&LinkLoss::Dropped, this));
  }

  uint64_t dropped = 0;

 private:
  void Dropped(ns3::Ptr<const ns3::Packet>) { dropped++; }
};

}  // namespace gradlane_sim
