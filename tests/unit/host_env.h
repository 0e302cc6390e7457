/* SPDX-License-Identifier: GPL-2.0 */
/* Host build of the BBR core: the kernel structures it touches, with the kernel's field names,
 * so that the bpf/ algorithm files compile unchanged as plain C for unit tests.
 */
#ifndef HOST_ENV_H
#define HOST_ENV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#define BBR_INLINE static inline __attribute__((unused))
#define SEC(name)

enum tcp_ca_state { TCP_CA_Open, TCP_CA_Disorder, TCP_CA_CWR, TCP_CA_Recovery, TCP_CA_Loss };

enum tcp_ca_event {
	CA_EVENT_TX_START,
	CA_EVENT_CWND_RESTART,
	CA_EVENT_COMPLETE_CWR,
	CA_EVENT_LOSS,
	CA_EVENT_ECN_NO_CE,
	CA_EVENT_ECN_IS_CE,
};

enum sk_pacing { SK_PACING_NONE, SK_PACING_NEEDED, SK_PACING_FQ };

struct minmax_sample {
	u32 t;
	u32 v;
};

struct minmax {
	struct minmax_sample s[3];
};

struct sock {
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
	u8 sk_pacing_shift;
	u32 sk_pacing_status;
};

struct inet_connection_sock {
	struct sock icsk_sk; /* first, so a sock pointer is a connection sock pointer */
	u8 icsk_ca_state;
	u64 icsk_ca_priv[13];
};

struct tcp_rack {
	u32 rtt_us;
};

struct tcp_sock {
	struct inet_connection_sock inet_conn; /* first, as in the kernel */
	u32 snd_cwnd;
	u32 snd_cwnd_clamp;
	u32 snd_ssthresh;
	u32 delivered;
	u32 delivered_ce;
	u32 lost;
	u32 total_retrans;
	u32 mss_cache;
	u32 app_limited;
	u32 snd_nxt;
	u32 packets_out;
	u32 sacked_out;
	u32 lost_out;
	u32 retrans_out;
	u32 srtt_us;
	u32 prior_cwnd;
	u8 ecn_flags;
	u8 is_cwnd_limited : 1;
	u64 tcp_mstamp;
	u64 delivered_mstamp;
	u64 tcp_clock_cache;
	u64 tcp_wstamp_ns;
	struct minmax rtt_min;
	struct tcp_rack rack;
};

struct rate_sample {
	u64 prior_mstamp;
	u32 prior_delivered;
	s32 delivered;
	s32 delivered_ce;
	long interval_us;
	long rtt_us;
	int losses;
	u32 acked_sacked;
	u32 prior_in_flight;
	u32 last_end_seq;
	bool is_app_limited;
	bool is_retrans;
	bool is_ack_delayed;
};

static inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The clock the core reads outside ACK processing (init), in microseconds; the simulation
 * advances it with tcp_mstamp, and tests let them differ (an idle socket's stale tcp_mstamp).
 */
static u64 host_clock_us;

static inline u64 bbr_clock_us(void)
{
	return host_clock_us;
}

/* Tests choose the "random" PROBE_BW starting phase. */
static u32 host_random_value;

static inline u32 bbr_random_u32(void)
{
	return host_random_value;
}

/* Trace records go to an in-memory log (see bbr_ops.h). */
struct bbrkit_flow;
static bool host_trace_enabled;
static void host_trace_record(const struct bbrkit_flow *f);

#endif /* HOST_ENV_H */
