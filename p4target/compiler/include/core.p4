/* core.p4 of the gradlane embedded P4 target.
 * The P4_16 core library declarations (language spec, appendix "core library"), written for
 * this compiler: the standard errors, packet_in/packet_out, verify, NoAction and the basic
 * match kinds. Names and signatures follow the specification so programs written for p4c
 * compile unchanged. */
#ifndef GRADLANE_P4TARGET_CORE_P4
#define GRADLANE_P4TARGET_CORE_P4
/* The guard name p4c's core.p4 defines; programs test it with #ifdef. */
#define _CORE_P4_

/* Errors a parser may signal. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed. */
extern packet_in {
    /* Fixed-size header: copy the next bits into hdr and make it valid. */
    void extract<T>(out T hdr);
    /* Header ending in a varbit field of the given size in bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Peek at the next bits without consuming them. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Total packet length in bytes. */
    bit<32> length();
}

/* The packet being deparsed. */
extern packet_out {
    /* Append hdr to the output when it is valid (structs/stacks: every member in order). */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false, stop parsing with error toSignal. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; tables use it as their default. (Current p4c marks it
   @corelib, and both annotations reach P4Info.) */
@corelib
@noWarn("unused")
action NoAction() {}

/* Compile-time assertions. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

/* Match kinds every target supports. */
match_kind {
    exact,
    ternary,
    lpm
}

#endif
