/* SPDX-License-Identifier: GPL-2.0 */
/* A minimal test runner: TEST() registers a case, CHECK*() fail it with file:line and values.
 * `test_x` runs all cases and ends with "N passed, N failed"; `test_x --list` names them;
 * `test_x NAME` runs one.
 */
#ifndef CHECK_H
#define CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CHECK_MAX_TESTS 128

struct check_case {
	const char *name;
	void (*fn)(void);
};

static struct check_case check_cases[CHECK_MAX_TESTS];
static int check_count;
static int check_failed_now;

#define TEST(test_name) \
	static void test_name(void); \
	__attribute__((constructor)) static void check_register_##test_name(void) \
	{ \
		check_cases[check_count].name = #test_name; \
		check_cases[check_count++].fn = test_name; \
	} \
	static void test_name(void)

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			check_failed_now = 1; \
			return; \
		} \
	} while (0)

#define CHECK_EQ(a, b) \
	do { \
		uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b); \
		if (check_a_ != check_b_) { \
			fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__, \
				__LINE__, #a, #b, check_a_, check_b_); \
			check_failed_now = 1; \
			return; \
		} \
	} while (0)

/* |a - b| <= tol, for rates and other derived quantities. */
#define CHECK_NEAR(a, b, tol) \
	do { \
		double check_a_ = (double)(a), check_b_ = (double)(b); \
		if (check_a_ - check_b_ > (tol) || check_b_ - check_a_ > (tol)) { \
			fprintf(stderr, "%s:%d: %s ~ %s failed: %.6g vs %.6g (tolerance %.3g)\n", __FILE__, \
				__LINE__, #a, #b, check_a_, check_b_, (double)(tol)); \
			check_failed_now = 1; \
			return; \
		} \
	} while (0)

static void check_setup(void);

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (int i = 0; i < check_count; i++)
			printf("%s\n", check_cases[i].name);
		return 0;
	}
	for (int i = 0; i < check_count; i++) {
		if (argc > 1 && strcmp(argv[1], check_cases[i].name))
			continue;
		check_failed_now = 0;
		check_setup();
		check_cases[i].fn();
		printf("%s %s\n", check_failed_now ? "FAIL" : "ok  ", check_cases[i].name);
		if (check_failed_now)
			failed++;
		else
			passed++;
	}
	if (passed + failed == 0) {
		fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
		return 1;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif /* CHECK_H */
