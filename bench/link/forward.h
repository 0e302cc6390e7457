/* SPDX-License-Identifier: GPL-2.0 */
/* The threads of bbrkit-link's two directions (forward.c). */
#ifndef BBRKIT_LINK_FORWARD_H
#define BBRKIT_LINK_FORWARD_H

/* A shaping direction's thread (its struct lpath): shapes until its stop_fd is readable. */
void *lp_main(void *arg);
/* The unshaped ACK direction's thread: frames go straight through, in order. */
void *lp_passthrough_main(void *arg);

#endif
