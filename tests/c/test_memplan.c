/* The memory planner (graph/memplan.c): blocks live at the same time
 * never share bytes, blocks that are not do, offsets are aligned, and
 * the arena stays close to the lower bound. Also the buffer peak
 * counter the Python memory tests read. */
#include <stdlib.h>

#include "check.h"
#include "core/buffer.h"
#include "graph/memplan.h"

static int
valid(const tfm_mem_block *b, int32_t n, size_t align, size_t total)
{
    for (int32_t i = 0; i < n; i++) {
        if (b[i].offset % align || b[i].offset + b[i].size > total)
            return 0;
        for (int32_t j = i + 1; j < n; j++) {
            int live = b[i].first <= b[j].last && b[j].first <= b[i].last;
            int space = b[i].offset < b[j].offset + b[j].size &&
                        b[j].offset < b[i].offset + b[i].size;
            if (live && space && b[i].size && b[j].size)
                return 0;
        }
    }
    return 1;
}

TEST(chain_reuses_two_buffers)
{
    /* a -> b -> c -> d, each read by the next step only: two at a time. */
    tfm_mem_block b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (tfm_mem_block){i, i + 1, 1000, 0};
    size_t total = 0;
    CHECK_EQ_INT(tfm_memplan_assign(b, 4, 64, &total), 0);
    CHECK(valid(b, 4, 64, total));
    CHECK_EQ_INT(total, 2 * 1024);
    CHECK_EQ_INT(b[0].offset, b[2].offset);
    CHECK_EQ_INT(b[1].offset, b[3].offset);
    CHECK(b[0].offset != b[1].offset);
}

TEST(overlapping_at_one_step_do_not_share)
{
    /* Written at step 3 while the other is last read at step 3. */
    tfm_mem_block b[2] = {{0, 3, 64, 0}, {3, 5, 64, 0}};
    size_t total = 0;
    CHECK_EQ_INT(tfm_memplan_assign(b, 2, 64, &total), 0);
    CHECK(b[0].offset != b[1].offset);
    CHECK_EQ_INT(total, 128);
}

TEST(best_fit_fills_the_hole)
{
    /* Placed biggest first: H1 [0, 2048), X [2048, 3072), H2 [3072,
     * 3392), Y [3392, 3648). H1 and H2 die at step 1, so Z (from step 2)
     * sees holes of 2048 and 320 bytes: best fit takes the small one. */
    tfm_mem_block b[5] = {
        {0, 1, 2048, 0},    /* H1 */
        {0, 10, 1024, 0},   /* X */
        {0, 1, 300, 0},     /* H2 */
        {0, 10, 256, 0},    /* Y */
        {2, 10, 256, 0},    /* Z */
    };
    size_t total = 0;
    CHECK_EQ_INT(tfm_memplan_assign(b, 5, 64, &total), 0);
    CHECK(valid(b, 5, 64, total));
    CHECK_EQ_INT(b[0].offset, 0);
    CHECK_EQ_INT(b[1].offset, 2048);
    CHECK_EQ_INT(b[2].offset, 3072);
    CHECK_EQ_INT(b[3].offset, 3392);
    CHECK_EQ_INT(b[4].offset, 3072);
    CHECK_EQ_INT(total, 3648);
}

TEST(random_plans_are_valid_and_tight)
{
    srand(7);
    for (int trial = 0; trial < 200; trial++) {
        int32_t n = 1 + rand() % 60;
        tfm_mem_block *b = calloc((size_t)n, sizeof *b);
        CHECK(b != NULL);
        if (!b)
            return;
        for (int32_t i = 0; i < n; i++) {
            int32_t first = rand() % 40;
            b[i].first = first;
            b[i].last = first + rand() % 10;
            b[i].size = (size_t)(rand() % 5 == 0 ? 0 : 1 + rand() % 5000);
        }
        size_t total = 0, sum = 0;
        CHECK_EQ_INT(tfm_memplan_assign(b, n, 64, &total), 0);
        CHECK(valid(b, n, 64, total));
        for (int32_t i = 0; i < n; i++)
            sum += (b[i].size + 63) / 64 * 64;
        size_t low = tfm_memplan_lower_bound(b, n, 64);
        CHECK(total >= low);
        CHECK(total <= sum);
        /* Greedy-by-size stays within 2x of the bound on these. */
        CHECK(total <= 2 * low + 64);
        free(b);
    }
}

TEST(empty_plan)
{
    size_t total = 123;
    CHECK_EQ_INT(tfm_memplan_assign(NULL, 0, 64, &total), 0);
    CHECK_EQ_INT(total, 0);
}

TEST(peak_counter_tracks_the_high_water_mark)
{
    tfm_buffer_reset_peak();
    int64_t base = tfm_buffer_live_bytes();
    CHECK_EQ_INT(tfm_buffer_peak_bytes(), base);
    tfm_buffer *a = tfm_buffer_new(1 << 16, TFM_CPU);
    tfm_buffer *b = tfm_buffer_new(1 << 12, TFM_CPU);
    CHECK(a && b);
    tfm_buffer_decref(a);
    CHECK_EQ_INT(tfm_buffer_peak_bytes(), base + (1 << 16) + (1 << 12));
    tfm_buffer_reset_peak();
    CHECK_EQ_INT(tfm_buffer_peak_bytes(), base + (1 << 12));
    tfm_buffer_decref(b);
    CHECK_EQ_INT(tfm_buffer_peak_bytes(), base + (1 << 12));
    CHECK_EQ_INT(tfm_buffer_live_bytes(), base);
}

RUN_TESTS(T(chain_reuses_two_buffers), T(overlapping_at_one_step_do_not_share),
          T(best_fit_fills_the_hole), T(random_plans_are_valid_and_tight),
          T(empty_plan), T(peak_counter_tracks_the_high_water_mark))
