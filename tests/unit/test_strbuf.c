// SPDX-License-Identifier: GPL-2.0
/* loader/strbuf.h: joining names into a fixed buffer never writes past it, whatever their length. */
#include "check.h"
#include "../../loader/strbuf.h"

static void check_setup(void)
{
}

TEST(joins_with_separators)
{
	char buf[32] = "";
	size_t used = 0;

	used = str_append(buf, sizeof(buf), used, "", "alpha");
	used = str_append(buf, sizeof(buf), used, ", ", "probe_exit");
	CHECK_EQ(used, strlen("alpha, probe_exit"));
	CHECK(!strcmp(buf, "alpha, probe_exit"));
}

/* Names longer than the buffer, one after another: the text stops at size - 1 and the guard bytes
 * behind the buffer stay untouched (snprintf's return value added up would have run past them).
 */
TEST(long_names_truncate_inside_the_buffer)
{
	struct {
		char buf[16];
		char guard[16];
	} m;
	char name[300];
	size_t used = 0;

	memset(&m, 'G', sizeof(m));
	m.buf[0] = '\0';
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (int i = 0; i < 4; i++) {
		used = str_append(m.buf, sizeof(m.buf), used, i ? ", " : "", name);
		CHECK_EQ(used, sizeof(m.buf) - 1);
	}
	CHECK_EQ(strlen(m.buf), sizeof(m.buf) - 1);
	for (size_t i = 0; i < sizeof(m.guard); i++)
		CHECK_EQ(m.guard[i], 'G');
}

TEST(zero_size_writes_nothing)
{
	char c = 'x';

	CHECK_EQ(str_append(&c, 0, 0, ", ", "alpha"), 0);
	CHECK_EQ(c, 'x');
}
