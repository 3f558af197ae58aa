/* test_siphash.c: SipHash-2-4 against the reference vectors (the paper's key 00..0f, messages
 * 00, 00 01, ... of 0 to 63 bytes), SipHash-1-3 against the reference implementation's (key 0),
 * and the tables' key: fixed when a test sets it, drawn afresh by every run otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "siphash.h"

/* SipHash-2-4, key 00 01 .. 0f; the paper's Appendix A example is the one of 15 bytes. */
static const uint64_t vectors24[64] = {
	0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
	0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
	0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
	0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
	0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull,
	0xbed65cf21aa2ee98ull, 0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
	0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull, 0x2f2e6163076bcfadull,
	0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull, 0xad87a3535c49ef28ull, 0x32d892fad841c342ull,
	0x7127512f72f27cceull, 0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
	0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull, 0x9abfd8766a33735cull,
	0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull, 0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull,
	0xf935451de4f21df2ull, 0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
	0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull, 0xa192d576b245165aull,
	0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full, 0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull,
	0xb78dbfaf3a8d83bdull, 0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
	0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull, 0x958a324ceb064572ull,
};

/* SipHash-1-3, key all zero (the reference implementation built with cROUNDS 1, dROUNDS 3). */
static const uint64_t vectors13[64] = {
	0xd1fba762150c532cull, 0x68a914128e01e473ull, 0x010bac45c41e3669ull, 0x4d4c9a4a8ef6e0adull,
	0x7cc43f98813e4dbdull, 0x5abe2169dff36275ull, 0xe3c25f87624f1cdbull, 0x2f098ab0c751325aull,
	0xead411e67ebe2eeaull, 0x75927f9d95124362ull, 0xaf9f77a65ab51a1dull, 0xfe64ce8b6617fcffull,
	0xa6baf4fb0f9fe1c2ull, 0xa0cf3211850f8e0dull, 0x7f86049379fbfe67ull, 0xf30eb725bb91c9eaull,
	0x8972188433a5c5b7ull, 0x4883c49a2c009c1dull, 0xadc2c0b63044067dull, 0x091f4a3329f87d19ull,
	0x639e355ae68c0100ull, 0xb17bef2cb5213239ull, 0xf8aeb1066236ccfeull, 0x37332b1389daa4ffull,
	0x31185a47af932f3aull, 0xebf352e82ae23e2full, 0xed36ff242fe478b2ull, 0x2454d97d299299dfull,
	0x8cd57fe8130d0ac7ull, 0xbe98eb2faf0a0e85ull, 0xd427c34ee09470c6ull, 0x169739443111d49bull,
	0x31ef8061c910629bull, 0x7fb71d24dfa4c9f6ull, 0x92771f49e836d389ull, 0x3c393cf6f0853bc3ull,
	0xac77921fcc642bd3ull, 0x422a9751192ff266ull, 0xc680ae8a8c584ddfull, 0x6c76b6d34bb6d26bull,
	0x95bc321ab41d8206ull, 0x908a3a97a6d37669ull, 0xfcaf3c64874dd0b4ull, 0xf689479b32b84a44ull,
	0xd857641079efd1fdull, 0x8b581578722633f7ull, 0x83cb09d35ea7bcd4ull, 0x8485f7f5ae725a0dull,
	0xfe1f2445ba50237full, 0x23cece041d7866b0ull, 0x416687480b336c09ull, 0xf15960da7e7f3892ull,
	0xded6177b9826835aull, 0xf80dae51668be6beull, 0x17ecc6ee6647df18ull, 0x5220d642b4a52110ull,
	0xa4f0cf4ba4adc016ull, 0xe5125bb26d1f2976ull, 0x851b0e75f580d256ull, 0x12605250a37e39acull,
	0xd95a713568daebf1ull, 0xcdcf4a42ec0dd605ull, 0xa5c708712b617164ull, 0x385d3e39e5f37359ull,
};

static unsigned char msg[64];

static void fill(void)
{
	for (int i = 0; i < 64; i++)
		msg[i] = (unsigned char)i;
}

static void test_siphash_24_reference_vectors(void **state)
{
	const struct siphash_key key = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };

	fill();
	for (size_t len = 0; len < 64; len++)
		assert_int_equal(siphash__24(&key, msg, len), vectors24[len]);
}

static void test_siphash_13_reference_vectors(void **state)
{
	const struct siphash_key key = { 0, 0 };

	fill();
	for (size_t len = 0; len < 64; len++)
		assert_int_equal(siphash__13(&key, msg, len), vectors13[len]);
}

/* Unaligned input gives the same hash (the tables hash keys at any offset). */
static void test_siphash_unaligned(void **state)
{
	const struct siphash_key key = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
	unsigned char buf[80];

	fill();
	memcpy(buf + 3, msg, 63);
	assert_int_equal(siphash__24(&key, buf + 3, 63), vectors24[63]);
}

static void test_siphash_table_key_set_by_test(void **state)
{
	const struct siphash_key key = { 0x0123456789abcdefull, 0xfedcba9876543210ull };
	uint64_t x = 0x00007f1234567890ull;
	unsigned char le[8];

	siphash__set_table_key(&key);
	fill();
	assert_int_equal(siphash__table(msg, 37), siphash__13(&key, msg, 37));
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(x >> (8 * i));
	assert_int_equal(siphash__table_u64(x), siphash__13(&key, le, 8));
}

/* The table hash of "stack" in a new process (its own first use draws its key). */
static uint64_t hash_in_child(void)
{
	int fd[2];
	uint64_t h = 0;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		h = siphash__table("stack", 5);
		_exit(write(fd[1], &h, sizeof(h)) == sizeof(h) ? 0 : 1);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &h, sizeof(h)), sizeof(h));
	close(fd[0]);
	waitpid(pid, NULL, 0);
	return h;
}

/* Every run has its own key: what collides in one run's tables does not in the next. */
static void test_siphash_table_key_random_per_run(void **state)
{
	uint64_t a = hash_in_child(), b = hash_in_child();
	const struct siphash_key zero = { 0, 0 };

	assert_true(a != b);
	assert_true(a != siphash__13(&zero, "stack", 5));
}

int main(void)
{
	/* The per-run test first: children of this process must not inherit a key set by a test. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_table_key_random_per_run),
		cmocka_unit_test(test_siphash_24_reference_vectors),
		cmocka_unit_test(test_siphash_13_reference_vectors),
		cmocka_unit_test(test_siphash_unaligned),
		cmocka_unit_test(test_siphash_table_key_set_by_test),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
