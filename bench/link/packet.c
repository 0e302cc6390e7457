// SPDX-License-Identifier: GPL-2.0
/* A frame as bbrkit-link's queue sees it (packet.h): parsed once on arrival, its ECN field read and set. */
#include "packet.h"

#define ETH_HLEN_BYTES 14
#define VLAN_HLEN_BYTES 4
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define IPPROTO_TCP_NUM 6
#define IPPROTO_UDP_NUM 17

uint8_t lq_ecn(const struct lq_pkt *p)
{
	if (!p->l3)
		return LQ_ECN_NOT_ECT;
	if (p->is_ipv6)
		return (p->l3[1] >> 4) & 3;
	return p->l3[1] & 3;
}

bool lq_set_ce(struct lq_pkt *p)
{
	uint8_t ecn = lq_ecn(p);

	if (ecn == LQ_ECN_NOT_ECT)
		return false;
	if (ecn == LQ_ECN_CE)
		return true;
	if (p->is_ipv6) {
		p->l3[1] |= LQ_ECN_CE << 4;
	} else {
		/* RFC 1624 incremental update of the header checksum for the changed TOS byte. */
		uint16_t old_word = (uint16_t)(p->l3[0] << 8 | p->l3[1]);
		uint16_t new_word = (uint16_t)(old_word | LQ_ECN_CE);
		uint32_t sum = (uint16_t) ~(p->l3[10] << 8 | p->l3[11]);

		sum += (uint16_t)~old_word;
		sum += new_word;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		p->l3[1] |= LQ_ECN_CE;
		p->l3[10] = (uint8_t)(~sum >> 8);
		p->l3[11] = (uint8_t)~sum;
	}
	return true;
}

static uint32_t mix32(uint32_t h, uint32_t v)
{
	/* One round of a Murmur3-style mix per word: cheap and spreads 5-tuples over the buckets. */
	v *= 0xcc9e2d51u;
	v = (v << 15) | (v >> 17);
	v *= 0x1b873593u;
	h ^= v;
	h = (h << 13) | (h >> 19);
	return h * 5 + 0xe6546b64u;
}

static uint32_t load32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

uint32_t lq_ipv4_src(const struct lq_pkt *p)
{
	return p->l3 && !p->is_ipv6 ? load32(p->l3 + 12) : 0;
}

void lq_frame_info(struct lq_pkt *p, uint8_t *frame, uint32_t len, uint32_t seed)
{
	uint32_t off = ETH_HLEN_BYTES, h = seed, l4 = 0;
	uint16_t type;
	uint8_t proto = 0;

	p->l3 = NULL;
	p->is_ipv6 = 0;
	p->hash = 0;
	if (len < ETH_HLEN_BYTES)
		return;
	type = (uint16_t)(frame[12] << 8 | frame[13]);
	if (type == ETHERTYPE_VLAN && len >= ETH_HLEN_BYTES + VLAN_HLEN_BYTES) {
		type = (uint16_t)(frame[16] << 8 | frame[17]);
		off += VLAN_HLEN_BYTES;
	}
	if (type == ETHERTYPE_IPV4 && len >= off + 20 && (frame[off] >> 4) == 4) {
		p->l3 = frame + off;
		proto = frame[off + 9];
		h = mix32(mix32(h, load32(frame + off + 12)), load32(frame + off + 16));
		l4 = off + (uint32_t)(frame[off] & 0xf) * 4;
	} else if (type == ETHERTYPE_IPV6 && len >= off + 40 && (frame[off] >> 4) == 6) {
		p->l3 = frame + off;
		p->is_ipv6 = 1;
		proto = frame[off + 6];
		for (uint32_t i = 8; i < 40; i += 4)
			h = mix32(h, load32(frame + off + i));
		l4 = off + 40;
	} else {
		p->hash = mix32(h, type);
		return;
	}
	h = mix32(h, proto);
	if ((proto == IPPROTO_TCP_NUM || proto == IPPROTO_UDP_NUM) && len >= l4 + 4)
		h = mix32(h, load32(frame + l4));
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	p->hash = h;
}
