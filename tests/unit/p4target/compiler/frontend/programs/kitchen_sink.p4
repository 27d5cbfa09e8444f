#include <core.p4>
#include <v1model.p4>
#define PORTS 4
const bit<16> TYPE_IPV4 = 0x800;
typedef bit<32> ip4Addr_t;
type bit<9> port_t;
enum bit<8> Kind { DATA = 1, ACK = 0x2 }
enum Color { RED, GREEN }
error { BadThing }
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> etherType; }
header opt_t { varbit<320> options; }
header_union ip_t { ethernet_t a; vlan_t b; }
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
struct headers { ethernet_t ethernet; vlan_t[2] vlans; ip_t u; packet_in_t pin; }
struct metadata { @field_list(1) bit<32> x; bit<8> y; }
extern MyExt<T> { MyExt(bit<32> n); T get(in bit<8> i); abstract void cb(inout T v); }
bit<8> add1(in bit<8> v) { return v + 1; }
parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) pvs;
    bit<8> tmp;
    state start {
        packet.extract(hdr.ethernet);
        tmp = packet.lookahead<bit<8>>();
        verify(tmp != 0, error.BadThing);
        transition select(hdr.ethernet.etherType, tmp) {
            (0x8100 &&& 0xEFFF, _): parse_vlan;
            (0x0800, 1 .. 5): accept;
            (pvs, default): accept;
            default: reject;
        }
    }
    state parse_vlan {
        packet.extract(hdr.vlans.next);
        transition select(hdr.vlans.last.etherType) { 0x8100: parse_vlan; _ : accept; }
    }
}
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) c;
    direct_counter(CounterType.packets_and_bytes) dc;
    direct_meter<bit<2>>(MeterType.bytes) dm;
    meter(32w16, MeterType.packets) m;
    register<bit<32>>(PORTS) r;
    action_selector(HashAlgorithm.crc16, 32w1024, 32w14) sel;
    bit<32> v = 0;
    action drop() { mark_to_drop(standard_metadata); }
    action set(bit<9> port, bit<32> val) {
        standard_metadata.egress_spec = port;
        meta.x = val |+| 1 |-| 2;
        meta.y = (bit<8>)(val >> 3)[7:0] ++ 4w0 == 12w0 ? 8w1 : 8s-1;
        hdr.vlans.push_front(1); hdr.vlans.pop_front(1);
        hdr.ethernet.setValid(); hdr.pin.setInvalid();
        if (hdr.vlans[0].isValid() && !hdr.u.a.isValid() || true) { exit; }
        r.read(v, 0); r.write((bit<32>)0, v + hdr.vlans.lastIndex);
        hash(meta.x, HashAlgorithm.crc32, 32w0, { hdr.ethernet.dst, hdr.ethernet.src }, 32w65536);
        random(meta.y, 8w0, 8w255);
        log_msg("x={}", {meta.x});
        digest<metadata>(1, meta);
        clone_preserving_field_list(CloneType.I2E, 5, 1);
        m.execute_meter(0, meta.y);
        dm.read(meta.y);
        c.count(1);
    }
    table t {
        key = { hdr.ethernet.dst : exact @name("dst"); hdr.ethernet.src : ternary; meta.y: range; meta.x: lpm; hdr.vlans[0].vid : optional; hdr.ethernet.etherType : selector; }
        actions = { set; @defaultonly drop; @tableonly NoAction; }
        const default_action = drop();
        const entries = {
            (1, 2 &&& 3, 1..2, 0x0a000000 &&& 0xff000000, _, _) : set(1, 2);
            priority=10: (1, _, default, _, 5, _) : drop();
            @priority(3) (2, _, _, _, _, _) : NoAction();
        }
        size = 1024;
        counters = dc;
        meters = dm;
        implementation = sel;
        support_timeout = true;
        @name("custom") my_prop = 5;
    }
    apply {
        switch (t.apply().action_run) {
            set:
            drop: { v = 1; }
            default: { }
        }
        if (t.apply().miss) { return; } else if (t.apply().hit) { v = 2; }
        switch (meta.y) { 1: { v = 3; } default: {} }
        Kind k = Kind.DATA;
        Color col = Color.RED;
        const bit<8> z = 3;
        bit<8> arr = add1(z);
        { v = v * 2 / 1 % 3 - -v; }
        meta = { x = 1, y = 2 };
        hdr.ethernet = {1, 2, 3};
        v = (bit<32>) k << 2;
        v = v & ~v ^ (v | 1);
        verify_checksum(true, { hdr.ethernet.dst }, hdr.ethernet.etherType, HashAlgorithm.csum16);
    }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { truncate(64); } }
control Vc(inout headers hdr, inout metadata meta) { apply { } }
control Cc(inout headers hdr, inout metadata meta) { apply { update_checksum_with_payload(hdr.ethernet.isValid(), {hdr.ethernet.src}, hdr.ethernet.etherType, HashAlgorithm.csum16); } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr); } }
V1Switch(MyParser(), Vc(), MyIngress(), MyEgress(), Cc(), D()) main;
