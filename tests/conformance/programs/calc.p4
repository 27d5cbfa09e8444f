// A calculator in the style of the P4 tutorials' exercise (written for this suite): a custom
// header after Ethernet ("P4" magic, version, opcode, two operands, result) chosen with
// lookahead of the whole header type; the switch computes and sends the packet back.
#include <core.p4>
#include <v1model.p4>

const bit<16> CALC_ETYPE = 0x1234;
const bit<8>  CALC_P = 0x50;   // 'P'
const bit<8>  CALC_4 = 0x34;   // '4'
const bit<8>  CALC_VER = 0x01;

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header calc_t {
    bit<8>  p;
    bit<8>  four;
    bit<8>  ver;
    bit<8>  op;
    bit<32> operand_a;
    bit<32> operand_b;
    bit<32> res;
}
struct headers { ethernet_t ethernet; calc_t calc; }
struct metadata { }

parser CalcParser(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            CALC_ETYPE: check_calc;
            default: accept;
        }
    }
    state check_calc {
        transition select(packet.lookahead<calc_t>().p, packet.lookahead<calc_t>().four,
                          packet.lookahead<calc_t>().ver) {
            (CALC_P, CALC_4, CALC_VER): parse_calc;
            default: accept;
        }
    }
    state parse_calc {
        packet.extract(hdr.calc);
        transition accept;
    }
}

control CalcVerify(inout headers hdr, inout metadata meta) { apply { } }

control CalcIngress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    action send_back(bit<32> result) {
        bit<48> tmp = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = tmp;
        hdr.calc.res = result;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }
    action op_add() { send_back(hdr.calc.operand_a + hdr.calc.operand_b); }
    action op_sub() { send_back(hdr.calc.operand_a - hdr.calc.operand_b); }
    action op_and() { send_back(hdr.calc.operand_a & hdr.calc.operand_b); }
    action op_or()  { send_back(hdr.calc.operand_a | hdr.calc.operand_b); }
    action op_xor() { send_back(hdr.calc.operand_a ^ hdr.calc.operand_b); }
    action op_drop() { mark_to_drop(standard_metadata); }

    table calculate {
        key = { hdr.calc.op: exact; }
        actions = { op_add; op_sub; op_and; op_or; op_xor; op_drop; }
        const default_action = op_drop();
        const entries = {
            0x2b : op_add();   // '+'
            0x2d : op_sub();   // '-'
            0x26 : op_and();   // '&'
            0x7c : op_or();    // '|'
            0x5e : op_xor();   // '^'
        }
    }
    apply {
        if (hdr.calc.isValid()) {
            calculate.apply();
        } else {
            op_drop();
        }
    }
}

control CalcEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) { apply { } }
control CalcCompute(inout headers hdr, inout metadata meta) { apply { } }
control CalcDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.calc); }
}

V1Switch(CalcParser(), CalcVerify(), CalcIngress(), CalcEgress(), CalcCompute(), CalcDeparser()) main;
