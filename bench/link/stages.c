// SPDX-License-Identifier: GPL-2.0
/* The path conditions around bbrkit-link's queue (stages.h says after which reference each works). */
#include "stages.h"

static uint64_t bytes_ns(uint64_t bytes, uint64_t rate_bps)
{
	return bytes * LS_BITS_PER_BYTE * LS_NSEC_PER_SEC / rate_bps;
}

void ls_police_init(struct ls_police *p, uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns)
{
	p->rate_bps = rate_bps;
	p->burst_ns = bytes_ns(burst_bytes, rate_bps);
	p->toks_ns = p->burst_ns; /* RFC 2697: the bucket starts full */
	p->last_ns = now_ns;
}

bool ls_police_conform(struct ls_police *p, uint32_t bytes, uint64_t now_ns)
{
	uint64_t cost = bytes_ns(bytes, p->rate_bps);

	if (now_ns > p->last_ns) {
		uint64_t room = p->burst_ns - p->toks_ns, add = now_ns - p->last_ns;

		p->toks_ns += add < room ? add : room;
		p->last_ns = now_ns;
	}
	if (p->toks_ns < cost)
		return false;
	p->toks_ns -= cost;
	return true;
}

void ls_reorder_init(struct ls_reorder *r, double prob, uint32_t gap, uint64_t seed)
{
	r->prob = prob;
	r->gap = gap;
	r->counter = 0;
	r->rng = seed;
}

bool ls_reorder_jump(struct ls_reorder *r)
{
	/* netem_enqueue: in order while counter < gap - 1 or the draw is at or above the probability. */
	if (r->counter + 1 < r->gap || ls_unit(&r->rng) >= r->prob) {
		r->counter++;
		return false;
	}
	r->counter = 0;
	return true;
}

/* get_slot_next: the next slot opens a uniform min..max after now, with a fresh packet budget. */
static void slot_next(struct ls_agg *a, uint64_t now_ns)
{
	uint64_t span = a->b_ns - a->a_ns;

	a->slot_next_ns = now_ns + a->a_ns + (span ? ls_next(&a->rng) % (span + 1) : 0);
	a->packets_left = a->pkts;
}

void ls_agg_init(struct ls_agg *a, enum ls_agg_kind kind, uint64_t a_ns, uint64_t b_ns, uint32_t pkts,
	uint64_t seed, uint64_t now_ns)
{
	*a = (struct ls_agg){ .kind = kind, .a_ns = a_ns, .b_ns = b_ns, .pkts = pkts, .rng = seed };
	a->start_ns = now_ns;
	if (kind == LS_AGG_SLOT)
		slot_next(a, now_ns);
}

bool ls_agg_may_send(struct ls_agg *a, uint64_t head_ns, uint32_t held, uint64_t now_ns, uint64_t *wake_ns)
{
	uint64_t period, phase;

	*wake_ns = UINT64_MAX;
	switch (a->kind) {
	case LS_AGG_NONE:
		return true;
	case LS_AGG_SLOT:
		/* netem_dequeue: a slot that opened before the head was ready is restarted from now. */
		if (a->slot_next_ns < head_ns)
			slot_next(a, now_ns);
		if (a->slot_next_ns <= now_ns)
			return true;
		*wake_ns = a->slot_next_ns;
		return false;
	case LS_AGG_COUNT:
		if (a->packets_left)
			return true;
		if (held >= a->pkts) {
			a->packets_left = a->pkts;
			return true;
		}
		if (now_ns >= head_ns + a->a_ns) {
			a->packets_left = held;
			return true;
		}
		*wake_ns = head_ns + a->a_ns;
		return false;
	case LS_AGG_ONOFF:
		period = a->a_ns + a->b_ns;
		phase = (now_ns - a->start_ns) % period;
		if (phase < a->a_ns)
			return true;
		*wake_ns = now_ns + (period - phase);
		return false;
	}
	return true;
}

void ls_agg_sent(struct ls_agg *a, uint64_t now_ns)
{
	if (a->kind == LS_AGG_COUNT && a->packets_left)
		a->packets_left--;
	else if (a->kind == LS_AGG_SLOT && a->pkts && --a->packets_left == 0)
		slot_next(a, now_ns);
}

uint64_t ls_ring_bytes(uint64_t floor_bytes, uint64_t rate_bps, uint32_t frame_bytes, uint32_t slot_bytes)
{
	/* the link's top rate, 10^11 bit/s, times 2 x 10^7 ns stays far inside 64 bits */
	uint64_t frames = rate_bps * LS_RING_GAP_NS / (LS_NSEC_PER_SEC * LS_BITS_PER_BYTE * frame_bytes);
	uint64_t bytes = (frames + 1) * slot_bytes;

	if (bytes > LS_RING_MAX_BYTES)
		bytes = LS_RING_MAX_BYTES;
	return bytes > floor_bytes ? bytes : floor_bytes;
}

int ls_src_add(struct ls_src_delay *s, uint32_t addr, uint64_t delay_ns)
{
	uint32_t line = 0, at = 0;

	while (at < s->n_addrs && s->addr[at] < addr)
		at++;
	if (at < s->n_addrs && s->addr[at] == addr)
		return -1;
	for (uint32_t l = 1; l <= s->n_lines && !line; l++)
		if (s->line_ns[l] == delay_ns)
			line = l;
	if (s->n_addrs == LS_MAX_SRC_ADDRS || (!line && s->n_lines == LS_MAX_SRC_LINES))
		return -2;
	if (!line) {
		line = ++s->n_lines;
		s->line_ns[line] = delay_ns;
	}
	for (uint32_t i = s->n_addrs; i > at; i--) {
		s->addr[i] = s->addr[i - 1];
		s->line[i] = s->line[i - 1];
	}
	s->addr[at] = addr;
	s->line[at] = (uint8_t)line;
	s->n_addrs++;
	return 0;
}

uint32_t ls_src_line(const struct ls_src_delay *s, uint32_t addr)
{
	uint32_t lo = 0, hi = s->n_addrs;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (s->addr[mid] == addr)
			return s->line[mid];
		if (s->addr[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}
