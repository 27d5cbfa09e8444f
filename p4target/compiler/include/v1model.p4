/* v1model.p4 of the gradlane embedded P4 target.
 * Declarations of the v1model architecture (the P4_16 model of BMv2 simple_switch), written
 * for this compiler from the architecture's public API: the same type, extern, enum and
 * package names, parameter directions, field widths, annotations and API revisions
 * (V1MODEL_VERSION) as the v1model.p4 of p4c 1.2.5.16 (commit 34b86e9bac), so v1model
 * programs compile unchanged. */
#ifndef GRADLANE_P4TARGET_V1MODEL_P4
#define GRADLANE_P4TARGET_V1MODEL_P4
/* The guard name p4c's v1model.p4 defines; programs test it with #ifdef. */
#define _V1_MODEL_P4_

#include <core.p4>

/* API revision; a program chooses one with #define V1MODEL_VERSION before the #include.
 * Without it the first revision, 20180101, applies (as with p4c). From 20200408 on, counters,
 * meters and registers are indexed by a type I and port numbers have the type PortId_t. */
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    range,
    optional,
    /* Dynamic action selection (tables with an action_selector). */
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
/* A port number of simple_switch (BMv2 ports are 9 bits wide). */
typedef bit<9> PortId_t;
#endif

/* Per-packet intrinsic metadata of simple_switch. @alias maps a field onto BMv2's
 * internal metadata name. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;
    PortId_t egress_port;
#else
    bit<9>  ingress_port;
    bit<9>  egress_spec;
    bit<9>  egress_port;
#endif
    bit<32> instance_type;
    bit<32> packet_length;
    @alias("queueing_metadata.enq_timestamp")  bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")     bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")  bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")     bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp") bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")  bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")     bit<16> mcast_grp;
    @alias("intrinsic_metadata.egress_rid")    bit<16> egress_rid;
    /* 1 when verify_checksum found a mismatch. */
    bit<1>  checksum_error;
    /* Error the parser ended with (error.NoError after a clean parse). */
    error   parser_error;
    @alias("intrinsic_metadata.priority")      bit<3>  priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* Indexed packet/byte counters. */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/* A counter per entry of the one table that names it in `counters = ...`. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Color encodings written by meters. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* Indexed two-rate three-color meters. */
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* A meter per entry of the one table that names it in `meters = ...`. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* Arrays of state the data plane reads and writes. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I>
#else
extern register<T>
#endif
{
    register(bit<32> size);
#if V1MODEL_VERSION >= 20200408
    @noSideEffects void read(out T result, in I index);
    void write(in I index, in T value);
#else
    @noSideEffects void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
#endif
}

/* Table implementation: action data shared by members. */
extern action_profile {
    action_profile(bit<32> size);
}

/* result = a random value in lo..hi inclusive. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send data to the control plane (a digest list named by T's struct name). */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* Set egress_spec to the drop port and clear mcast_grp. */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (H(data) % max) when max >= 1, else base. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Table implementation: action profile whose member is picked by a hash of the
 * `selector` key fields. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* Set standard_metadata.checksum_error when condition holds and checksum does not match
 * the checksum of data. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* When condition holds, checksum = the checksum of data. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As above, over data followed by the unparsed payload. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Clone the packet to the session's port at the end of ingress (I2E) or egress (E2E). */
extern void clone(in CloneType type, in bit<32> session);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/* Resubmit the original packet; metadata fields tagged @field_list(index) are kept. */
extern void resubmit_preserving_field_list(bit<8> index);

@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/* Recirculate the deparsed packet; metadata fields tagged @field_list(index) are kept. */
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/* clone() that also keeps the metadata fields tagged @field_list(index). */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Truncate the outgoing packet to length bytes. */
extern void truncate(in bit<32> length);

/* Debugging aids of simple_switch. */
extern void assert(in bool check);
extern void assume(in bool check);
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The programmable blocks and the package. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif
