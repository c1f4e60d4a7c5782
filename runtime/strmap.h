/* A small open-addressing map from strings to ints (value names, dim names). */
#ifndef NR_STRMAP_H
#define NR_STRMAP_H

#include <stddef.h>

typedef struct nr_strmap_slot {
    const char *key; /* borrowed: the caller keeps the string alive while it is in the map */
    int value;
} nr_strmap_slot;

typedef struct nr_strmap {
    nr_strmap_slot *slots;
    size_t cap;   /* power of two, or 0 */
    size_t count;
} nr_strmap;

/* Value for key, or -1. */
int nr_strmap_get(const nr_strmap *m, const char *key);
/* Insert or replace. Returns 0, or -1 when out of memory. */
int nr_strmap_put(nr_strmap *m, const char *key, int value);
void nr_strmap_free(nr_strmap *m);

#endif
