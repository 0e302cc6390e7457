// SPDX-License-Identifier: GPL-2.0
/*
 * One direction's link and what follows it (service.h). A frame leaves the link when its last bit would have
 * crossed it (at the rate) or at the delivery opportunity that carries its last byte (a trace).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "idle.h"
#include "packet.h"
#include "path.h"
#include "process.h"
#include "service.h"

/* After a late wake-up the link may catch up at most this much lost time in one burst, as a
 * token bucket of about a millisecond would. */
#define CATCHUP_NS 1000000ULL

static void tx_flush(struct lpath *p)
{
	static __thread struct mmsghdr msgs[LP_RX_BATCH];
	static __thread struct iovec iov[LP_RX_BATCH];
	int done = 0;
	uint64_t now;

	if (!p->tx_count)
		return;
	now = wire_now_ns();
	for (int i = 0; i < p->tx_count; i++) {
		uint64_t sched = p->tx_pending[i]->sched_ns;

		wire_added(&p->lateness, now > sched ? now - sched : 0);
		iov[i] = (struct iovec){ .iov_base = p->tx_pending[i]->buf,
			.iov_len = p->tx_pending[i]->wire_len };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (done < p->tx_count) {
		int n = sendmmsg(p->tx_fd, msgs + done, (unsigned int)(p->tx_count - done), 0);

		if (n > 0) {
			uint64_t bytes = 0;

			for (int i = done; i < done + n; i++)
				bytes += p->tx_pending[i]->p.len;
			LP_ADD(p, out_pkts, (uint64_t)n);
			LP_ADD(p, out_bytes, bytes);
			done += n;
			continue;
		}
		if (errno == ENXIO || errno == ENODEV) {
			wire_fail("output interface disappeared", errno);
			break;
		}
		LP_INC(p,
			drop_tx); /* ENOBUFS, ENETDOWN: the first frame is lost on the wire, as send() would lose it */
		done++;
	}
	for (int i = 0; i < p->tx_count; i++)
		lp_slot_put(p, p->tx_pending[i]);
	p->tx_count = 0;
}

static void send_now(struct lpath *p, struct lp_slot *s)
{
	p->tx_pending[p->tx_count++] = s;
	if (p->tx_count == LP_RX_BATCH)
		tx_flush(p);
}

static void fifo_push(struct lp_slot **head, struct lp_slot **tail, struct lp_slot *s)
{
	s->free_next = NULL;
	if (*tail)
		(*tail)->free_next = s;
	else
		*head = s;
	*tail = s;
}

static struct lp_slot *fifo_pop(struct lp_slot **head, struct lp_slot **tail)
{
	struct lp_slot *s = *head;

	*head = s->free_next;
	if (!*head)
		*tail = NULL;
	return s;
}

/* ACK aggregation (stages.h): frames past the delay line wait here for their burst. */
static void agg_release(struct lpath *p, uint64_t now)
{
	p->agg_wake_ns = UINT64_MAX;
	while (p->agg_head &&
		ls_agg_may_send(&p->agg, p->agg_head->due_ns, p->agg_held, now, &p->agg_wake_ns)) {
		struct lp_slot *s = fifo_pop(&p->agg_head, &p->agg_tail);

		s->sched_ns = now; /* held on purpose until now */
		send_now(p, s);
		p->agg_held--;
		ls_agg_sent(&p->agg, now);
	}
}

/* The frame is due to leave the delay line at @due. */
static void deliver(struct lpath *p, struct lp_slot *s, uint64_t due)
{
	if (p->cfg.agg == LS_AGG_NONE) {
		s->sched_ns = due;
		send_now(p, s);
		return;
	}
	s->due_ns = due; /* when it joined: the count's time-out and the slot's readiness run from here */
	fifo_push(&p->agg_head, &p->agg_tail, s);
	p->agg_held++;
}

/* After the link each frame waits the direction's delay, its source's (--src-delay) and a uniform 0..jitter_ns,
 * never leaving before the frame ahead of it in its line (netem's jitter reorders; this line does not), except
 * a frame netem's reorder picks: that one skips the line, as netem puts it at the head of its queue. @now is
 * when the frame was due to cross the link: the delay counts from there, so a late wake-up is not added to it. */
static void transmit(struct lpath *p, struct lp_slot *s, uint64_t now)
{
	uint32_t l = p->cfg.src.n_addrs ? ls_src_line(&p->cfg.src, lq_ipv4_src(&s->p)) : 0;
	uint64_t due;

	if (p->mm)
		fprintf(p->mm, "%" PRIu64 " - %u %" PRIu64 "\n", lp_mm_ms(p, now), lp_mm_bytes(p, s),
			lp_mm_ms(p, now) - lp_mm_ms(p, s->p.enq_ns));
	if (p->cfg.reorder_gap && ls_reorder_jump(&p->reorder)) {
		LP_INC(p, reordered);
		deliver(p, s, now);
		return;
	}
	if (!p->cfg.jitter_ns && !p->cfg.delay_ns && !p->cfg.src.line_ns[l]) {
		deliver(p, s, now);
		return;
	}
	due = now + p->cfg.delay_ns + p->cfg.src.line_ns[l] +
		(p->cfg.jitter_ns ? ls_next(&p->rng) % (p->cfg.jitter_ns + 1) : 0);
	if (p->line_tail[l] && due < p->line_tail[l]->due_ns)
		due = p->line_tail[l]->due_ns;
	s->due_ns = due;
	fifo_push(&p->line_head[l], &p->line_tail[l], s);
}

/* The line whose head is due first, or -1 with every line empty. */
static int first_line(const struct lpath *p)
{
	int first = -1;

	for (uint32_t l = 0; l <= p->cfg.src.n_lines; l++)
		if (p->line_head[l] && (first < 0 || p->line_head[l]->due_ns < p->line_head[first]->due_ns))
			first = (int)l;
	return first;
}

/* Frames leave the lines in the order they fall due, whichever line holds them. */
static void line_release(struct lpath *p, uint64_t now)
{
	int l;

	while ((l = first_line(p)) >= 0 && p->line_head[l]->due_ns <= now) {
		struct lp_slot *s = fifo_pop(&p->line_head[l], &p->line_tail[l]);

		deliver(p, s, s->due_ns);
	}
	if (p->agg_head)
		agg_release(p, now);
}

static uint64_t opp_time(const struct lpath *p)
{
	return p->period_base + p->cfg.trace.ns[p->next_opp];
}

static void opp_advance(struct lpath *p)
{
	if (p->mm)
		fprintf(p->mm, "%" PRIu64 " # %d\n", lp_mm_ms(p, opp_time(p)), TRACE_OPPORTUNITY_BYTES);
	if (++p->next_opp == p->cfg.trace.len) {
		p->next_opp = 0;
		p->period_base += p->cfg.trace.period_ns;
	}
}

/* Rate mode: the capacity of each whole ms up to @now, as mm-throughput-graph sums "#" bytes per bin. */
static void mm_capacity(struct lpath *p, uint64_t now)
{
	uint64_t ms = lp_mm_ms(p, now);

	for (; p->mm_cap_ms < ms; p->mm_cap_ms++) {
		/* A ms carries rate_bps thousandths of a bit; the remainder carries to the next ms. */
		uint64_t mbits = p->cfg.rate_bps + p->mm_cap_rem;

		p->mm_cap_rem = mbits % (LS_BITS_PER_BYTE * 1000);
		fprintf(p->mm, "%" PRIu64 " # %" PRIu64 "\n", p->mm_cap_ms,
			(uint64_t)(mbits / (LS_BITS_PER_BYTE * 1000)));
	}
}

/* Controlled lateness (--stall): before a departure, with probability stall_prob, the thread stops for
 * stall_ns as a preempted thread would, so what is due meanwhile leaves late and the lateness counters see it as
 * they see any late wake-up. Returns the time after the stall (@now without one). */
static uint64_t stall(struct lpath *p, uint64_t now)
{
	uint64_t until = now + p->cfg.stall_ns;
	struct timespec ts;

	/* Every departure passes here: without a stall, nothing more than this test. */
	if (!p->cfg.stall_ns || ls_unit(&p->rng) >= p->cfg.stall_prob)
		return now;
	ts.tv_sec = (time_t)(until / WIRE_NSEC_PER_SEC);
	ts.tv_nsec = (long)(until % WIRE_NSEC_PER_SEC);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	LP_INC(p, stalls_injected);
	return wire_now_ns();
}

/* Departures due by @now at the rate; returns the time after them (later than @now after a stall). */
static uint64_t service_rate(struct lpath *p, uint64_t now)
{
	for (;;) {
		uint64_t start, idle_busy;

		if (p->cur) {
			if (p->cur_finish > now)
				return now;
			now = stall(p, now);
			wire_late(&p->lateness, now - p->cur_finish);
			p->free_at = p->cur_finish;
			transmit(p, p->cur, p->cur_finish);
			p->cur = NULL;
		}
		p->cur = (struct lp_slot *)lq_dequeue(&p->q, now);
		if (!p->cur)
			return now;
		start = p->free_at;
		if (start < p->cur->p.enq_ns)
			start = p->cur->p.enq_ns;
		idle_busy = lp_idle_busy_until(&p->idle);
		if (start < idle_busy)
			start = idle_busy; /* behind the idle path's last frame */
		if (start + CATCHUP_NS < now) {
			/* Capacity the link never serves: counted, so a run can say what its rate lost. */
			p->forfeit_ns += now - CATCHUP_NS - start;
			LP_SET(p, forfeit_us, p->forfeit_ns / LQ_NSEC_PER_USEC);
			start = now - CATCHUP_NS;
		}
		/* No rate (an ACK direction with only delay or loss): the frame leaves at once. */
		if (p->cfg.rate_bps)
			start += (uint64_t)p->cur->p.len * LS_BITS_PER_BYTE * WIRE_NSEC_PER_SEC /
				p->cfg.rate_bps;
		p->cur_finish = start;
	}
}

/* Mahimahi's LinkQueue::rationalize: every opportunity at or before @t delivers up to 1504 bytes of the
 * queue's head at its own time (frames may span opportunities) or, with nothing queued, is lost. The
 * forwarding loop runs it with @burn_idle false, leaving an idle link's opportunities alone: frames may be
 * waiting unread in the socket with earlier arrival stamps. Admission runs it up to the frame's arrival
 * first (@burn_idle true), as Mahimahi before enqueueing, so an opportunity at the arrival time itself is
 * gone (Mahimahi's millisecond clock: a frame can use an opportunity only from a later millisecond). */
uint64_t lp_service_trace(struct lpath *p, uint64_t t, bool burn_idle)
{
	while (opp_time(p) <= t) {
		uint32_t budget = TRACE_OPPORTUNITY_BYTES;
		uint64_t at = opp_time(p);

		if (!p->cur && p->q.backlog_pkts == 0) {
			if (!burn_idle)
				return t;
			/* Whole periods at once: every opportunity before the latest period start is past, so the
			 * count restarts there (keeping the index would land up to a period late). The mm-link log
			 * lists each, as Mahimahi burns them one by one. */
			if (!p->mm && t - p->period_base >= p->cfg.trace.period_ns) {
				p->period_base += (t - p->period_base) / p->cfg.trace.period_ns *
					p->cfg.trace.period_ns;
				p->next_opp = 0;
			} else {
				opp_advance(p);
			}
			continue;
		}
		if (!burn_idle) {
			t = stall(p, t);
			wire_late(&p->lateness, t - at);
		}
		opp_advance(p);
		while (budget) {
			uint32_t take;

			if (!p->cur) {
				p->cur = (struct lp_slot *)lq_dequeue(&p->q, at);
				if (!p->cur)
					break;
				p->cur_left = lp_trace_cost(p->cur);
			}
			take = p->cur_left < budget ? p->cur_left : budget;
			budget -= take;
			p->cur_left -= take;
			if (!p->cur_left) {
				transmit(p, p->cur, at);
				p->cur = NULL;
			}
		}
	}
	return t;
}

void lp_service(struct lpath *p, uint64_t now)
{
	if (p->mm && !p->cfg.trace.ns && p->cfg.rate_bps)
		mm_capacity(p, now);
	now = p->cfg.trace.ns ? lp_service_trace(p, now, false) : service_rate(p, now);
	line_release(p, now);
	tx_flush(p);
}

uint64_t lp_next_event(const struct lpath *p)
{
	uint64_t t = p->cfg.trace.ns ? (p->cur || p->q.backlog_pkts ? opp_time(p) : UINT64_MAX)
				     : (p->cur ? p->cur_finish : UINT64_MAX);

	int l = first_line(p);

	if (l >= 0 && p->line_head[l]->due_ns < t)
		t = p->line_head[l]->due_ns;
	if (p->agg_head && p->agg_wake_ns < t)
		t = p->agg_wake_ns;
	return t;
}
