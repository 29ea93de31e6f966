/*
 * hostprobe: what phase is this shared host in?
 *
 * The swarm benchmark's wall time on these 2-core cloud machines swings by
 * up to 2x within an hour for the same build (BENCHMARKS.md, tenth and
 * eleventh sessions). This probe tells which part of the machine moved:
 *
 *   compute     1e9 steps of a dependent multiply-xorshift chain (s): the core;
 *   dram-chase  a pointer chase through a random single cycle over 64 MB (ns
 *               per load): main memory, shared with other tenants;
 *   8MB-chase   the same through 8 MB (ns per load): the last-level cache,
 *               which other tenants' work can fill.
 *
 * Build and run (about 9 s on one core):
 *
 *   cc -O2 -o /tmp/hostprobe bench/hostprobe.c && /tmp/hostprobe
 *
 * The two numbers in parentheses only keep the compiler from dropping the
 * loops.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t xorshift(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* An array of n indices forming one random cycle (Sattolo's shuffle). */
static size_t *cycle(size_t n) {
    size_t *p = malloc(n * sizeof *p);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = xorshift() % i;
        size_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    return p;
}

/* Nanoseconds per load of `steps` dependent loads through `p`. */
static double chase(const size_t *p, long steps, size_t *k) {
    double t0 = seconds();
    for (long i = 0; i < steps; i++) *k = p[*k];
    return (seconds() - t0) / steps * 1e9;
}

int main(void) {
    double t0 = seconds();
    uint64_t x = 1;
    for (uint64_t i = 0; i < 1000000000ULL; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    double compute = seconds() - t0;

    size_t k = 0;
    size_t *big = cycle(8u << 20); /* 8 Mi entries: 64 MB */
    double dram = chase(big, 20000000, &k);
    size_t *small = cycle(1u << 20); /* 1 Mi entries: 8 MB */
    chase(small, 2000000, &k);       /* warm it */
    double llc = chase(small, 20000000, &k);

    printf("compute %.3f s  dram-chase %.1f ns  8MB-chase %.1f ns (%lu %lu)\n", compute, dram, llc,
           (unsigned long)x, (unsigned long)k);
    free(big);
    free(small);
    return 0;
}
