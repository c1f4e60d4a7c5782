#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "strmap.h"

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int nr_strmap_get(const nr_strmap *m, const char *key) {
    if (!m->cap || !key) return -1;
    for (size_t i = hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i].key) return -1;
        if (!strcmp(m->slots[i].key, key)) return m->slots[i].value;
    }
}

static int grow(nr_strmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    nr_strmap_slot *slots = nr_calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slots[j].key) continue;
        size_t i = hash_str(m->slots[j].key) & (cap - 1);
        while (slots[i].key) i = (i + 1) & (cap - 1);
        slots[i] = m->slots[j];
    }
    nr_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int nr_strmap_put(nr_strmap *m, const char *key, int value) {
    if ((m->count + 1) * 2 > m->cap && grow(m)) return -1;
    size_t i = hash_str(key) & (m->cap - 1);
    for (; m->slots[i].key; i = (i + 1) & (m->cap - 1))
        if (!strcmp(m->slots[i].key, key)) {
            m->slots[i].value = value;
            return 0;
        }
    m->slots[i].key = key;
    m->slots[i].value = value;
    m->count++;
    return 0;
}

void nr_strmap_free(nr_strmap *m) {
    nr_free(m->slots);
    memset(m, 0, sizeof *m);
}
