/* The executor's memory plan (Note [Memory plan] in exec.c): the
 * intermediates of a compiled graph whose sizes are known share one
 * arena, a buffer at a time per byte range, so that a plan run costs one
 * block of memory, reused from call to call, instead of a malloc per op
 * output. This file is the pure part: live ranges and sizes in, offsets
 * out; exec.c decides which values take part and runs with the arena. */
#ifndef TFM_GRAPH_MEMPLAN_H
#define TFM_GRAPH_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

/* One block of the arena: live from step `first` to step `last`, both
 * included (a value written by step s and last read by step t is live
 * over [s, t]: it shares step s with the inputs s reads, so it never
 * lands on them). */
typedef struct tfm_mem_block {
    int32_t first, last;
    size_t size;
    size_t offset;      /* out: byte offset in the arena */
} tfm_mem_block;

/* Give every block an offset, a multiple of align (a power of two), so
 * that blocks whose live ranges overlap get disjoint byte ranges. Sets
 * *total to the arena size needed. 0, or -1 when out of memory (offsets
 * then unset).
 *
 * Greedy by size: the biggest blocks are placed first, each into the
 * smallest gap left by the blocks already placed that are live at the
 * same time (best fit), else after them. Finding the optimum is
 * NP-hard; this is the heuristic TFLite's arena planner uses and is
 * within a few percent of the lower bound (the most bytes live at one
 * step) on the graphs we trace. O(n^2) for n blocks. */
int tfm_memplan_assign(tfm_mem_block *blocks, int32_t n, size_t align,
                       size_t *total);

/* The lower bound: the most bytes live at any one step (sizes rounded
 * up to align). For tests and the plan's statistics. */
size_t tfm_memplan_lower_bound(const tfm_mem_block *blocks, int32_t n,
                               size_t align);

#endif
