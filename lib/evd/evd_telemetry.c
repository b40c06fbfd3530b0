/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rte_telemetry commands, for reading a running application's loops with
 * DPDK's own client (dpdk-telemetry.py):
 *   /evd/list               the loops' ids (the newest 512)
 *   /evd/stats,<loop>       a loop: name, policy, mode, its stats, what
 *                           the policy learned, and the cost model
 *   /evd/sources,<loop>     a loop's sources and their stats, as many as a
 *                           reply holds, and how many more
 *   /evd/xstats,<loop>      the same counters flat, xstats-style names
 *                           (<kind>_<id>_<counter>, e.g. ring_0_events)
 * <loop> is an id from /evd/list or a loop name.
 *
 * The registry's lock guards the list of loops and each loop's source table
 * (evd_sources.c takes it around changes), so a loop or a source is never
 * read after it left; a refusal that names another thread's loop reads the
 * name under it too (evd_hold.c). Stats are read as the loop's own stats
 * calls read them.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include "evd_private.h"

/* recursive: a command reads sources' stats under it, which take it too */
static pthread_mutex_t registry = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct evd_loop *loops; /* newest first */
static uint32_t next_id;

void
evd__registry_lock(void)
{
	pthread_mutex_lock(&registry);
}

void
evd__registry_unlock(void)
{
	pthread_mutex_unlock(&registry);
}

void
evd__registry_add(struct evd_loop *loop)
{
	evd__registry_lock();
	loop->id = next_id++;
	loop->tm_next = loops;
	loops = loop;
	evd__registry_unlock();
}

void
evd__registry_remove(struct evd_loop *loop)
{
	evd__registry_lock();
	for (struct evd_loop **p = &loops; *p != NULL; p = &(*p)->tm_next)
		if (*p == loop) {
			*p = loop->tm_next;
			break;
		}
	evd__registry_unlock();
}

/* The loop a command names (an id or a name), with the registry locked; or
 * NULL, unlocked. */
static struct evd_loop *
lock_find(const char *param)
{
	unsigned long long id = 0;
	bool digits;

	if (param == NULL || *param == '\0')
		return NULL;
	/* an id is digits only ("-0", " 0" or 2^64 - 1 are no loop's), and an
	 * id names its loop before a loop whose name is those digits */
	digits = strspn(param, "0123456789") == strlen(param);
	if (digits) {
		errno = 0;
		id = strtoull(param, NULL, 10);
		digits = errno == 0 && id <= UINT32_MAX;
	}
	evd__registry_lock();
	for (struct evd_loop *l = loops; digits && l != NULL; l = l->tm_next)
		if (l->id == id)
			return l;
	for (struct evd_loop *l = loops; l != NULL; l = l->tm_next)
		if (strcmp(l->name, param) == 0)
			return l;
	evd__registry_unlock();
	return NULL;
}

struct evd_loop *
evd_loop_lookup(const char *name)
{
	struct evd_loop *found = NULL;

	if (name == NULL) {
		EVD_LOG(ERR, "evd_loop_lookup: name is NULL");
		return NULL;
	}
	evd__registry_lock();
	for (struct evd_loop *l = loops; l != NULL && found == NULL; l = l->tm_next)
		if (strcmp(l->name, name) == 0)
			found = l;
	evd__registry_unlock();
	return found;
}

static const char *const mode_name[EVD_MODE_COUNT] = { "poll", "pause", "sleep" };

static int
tm_list(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint32_t ids[RTE_TEL_MAX_ARRAY_ENTRIES];
	unsigned int n = 0;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	evd__registry_lock();
	for (struct evd_loop *l = loops; l != NULL && n < RTE_DIM(ids); l = l->tm_next)
		ids[n++] = l->id;
	evd__registry_unlock();
	while (n > 0) /* oldest first */
		rte_tel_data_add_array_int(d, (int)ids[--n]);
	return 0;
}

#define U64(d, s, f) rte_tel_data_add_dict_u64(d, #f, (s)->f)

/* The process's cost model (B, and L after 10 us, 100 us, 1 ms, 10 ms),
 * if a policy measured it or it was given; never measures. */
static void
cost_model(struct rte_tel_data *d)
{
	const struct evd_policy_env *e = evd_policy_env_peek(NULL);
	struct rte_tel_data *c;

	if (e == NULL)
		return;
	rte_tel_data_add_dict_u64(d, "cost_model_B_ns", e->sleep_wake_ns);
	c = rte_tel_data_alloc();
	if (c == NULL)
		return;
	rte_tel_data_start_array(c, RTE_TEL_U64_VAL);
	for (int k = 0; k < EVD_ENV_WAKE_POINTS; k++)
		rte_tel_data_add_array_u64(c, e->wake_ns[k]);
	if (rte_tel_data_add_dict_container(d, "cost_model_L_ns", c, 0) < 0)
		rte_tel_data_free(c);
}

static int
tm_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct evd_loop_stats st;
	struct evd_loop *l;

	RTE_SET_USED(cmd);
	l = lock_find(params);
	if (l == NULL)
		return -EINVAL;
	if (evd_loop_stats_get(l, &st) < 0) {
		evd__registry_unlock();
		return -EINVAL;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "id", (int)l->id);
	rte_tel_data_add_dict_string(d, "name", l->name);
	rte_tel_data_add_dict_string(d, "policy", l->policy.ops->name);
	rte_tel_data_add_dict_string(d, "clock", evd__clock_name(l));
	/* where its memory is: a socket, -1 for any or libc's (before the EAL) */
	rte_tel_data_add_dict_int(d, "socket", l->mem.dpdk ? l->mem.socket : -1);
	/* 1: a pause waits in the CPU's light wait (TPAUSE), 0: PAUSE spins */
	rte_tel_data_add_dict_int(d, "power_pause", evd__power_pause());
	rte_tel_data_add_dict_string(d, "mode", st.mode < EVD_MODE_COUNT ? mode_name[st.mode] : "?");
	/* 1: in evd_loop_run() (2, a step of evd_loop_step(), is not "running") */
	rte_tel_data_add_dict_int(d, "running", __atomic_load_n(&l->running, __ATOMIC_ACQUIRE) == 1);
	rte_tel_data_add_dict_int(d, "sources", (int)l->n_src);
	U64(d, &st, polls);
	U64(d, &st, empty_polls);
	U64(d, &st, events);
	U64(d, &st, arms);
	U64(d, &st, repoll_hits);
	U64(d, &st, sleeps);
	U64(d, &st, wakeups);
	U64(d, &st, spurious_wakeups);
	U64(d, &st, sleep_timeouts);
	U64(d, &st, lost_wakeups);
	U64(d, &st, pauses);
	U64(d, &st, naps);
	U64(d, &st, mode_switches);
	U64(d, &st, timers_fired);
	U64(d, &st, errors);
	U64(d, &st, cpu_ns);
	rte_tel_data_add_dict_u64(d, "poll_ns", st.mode_ns[EVD_MODE_POLL]);
	rte_tel_data_add_dict_u64(d, "pause_ns", st.mode_ns[EVD_MODE_PAUSE]);
	rte_tel_data_add_dict_u64(d, "sleep_ns", st.mode_ns[EVD_MODE_SLEEP]);
	if (l->policy.ops->describe != NULL) {
		char learned[RTE_TEL_MAX_STRING_LEN];

		learned[0] = '\0';
		l->policy.ops->describe(l->policy.state, learned, sizeof(learned));
		rte_tel_data_add_dict_string(d, "policy_state", learned);
	}
	cost_model(d);
	evd__registry_unlock();
	return 0;
}

/* The reply's room: telemetry sends at most 16 KB (its max_output_len) and
 * leaves out, unsaid, a container that does not fit; this much is kept for
 * the command's name and the "more" entry. */
#define TM_REPLY_BYTES (16384 - 64)

/* Add an entry to @p c; returns what it adds to the JSON reply:
 * "name":value and its comma. */
static size_t
tm_u64(struct rte_tel_data *c, const char *name, uint64_t v)
{
	size_t n = strlen(name) + 4;

	rte_tel_data_add_dict_u64(c, name, v);
	do
		n++;
	while ((v /= 10) != 0);
	return n;
}

static size_t
tm_str(struct rte_tel_data *c, const char *name, const char *v)
{
	size_t n = strlen(name) + 6;

	rte_tel_data_add_dict_string(c, name, v);
	/* a quote and a backslash are escaped (names hold no control character) */
	for (; *v != '\0'; v++)
		n += *v == '"' || *v == '\\' ? 2 : 1;
	return n;
}

/* A source's counters, by name and offset: /evd/sources and /evd/xstats
 * carry these, in this order. */
static const struct {
	const char *name;
	size_t off;
} xstat[] = {
#define X(f) { #f, offsetof(struct evd_source_stats, f) }
	X(polls), X(empty_polls), X(events), X(arms), X(repoll_hits), X(wakeups),
	X(spurious_wakeups), X(lost_wakeups), X(errors), X(full),
#undef X
};

static uint64_t
xstat_get(const struct evd_source_stats *st, size_t x)
{
	return *(const uint64_t *)((const char *)st + xstat[x].off);
}

static int
tm_sources(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct evd_loop *l;
	size_t used = 0;
	uint32_t i;

	RTE_SET_USED(cmd);
	l = lock_find(params);
	if (l == NULL)
		return -EINVAL;
	/* keyed by the source's id: telemetry takes [A-Za-z0-9_/] in keys only,
	 * and refused "port0.rxq0" or "events-1" (those sources went missing);
	 * two sources may share a name, never an id. As many as the reply holds,
	 * in the loop's order; "more" counts the rest. */
	rte_tel_data_start_dict(d);
	for (i = 0; i < l->n_src && i < RTE_TEL_MAX_DICT_ENTRIES - 1; i++) {
		struct evd_source *s = l->src[i];
		struct rte_tel_data *c = rte_tel_data_alloc();
		struct evd_source_stats st;
		char key[16];
		size_t len;

		if (c == NULL)
			break;
		evd_source_stats_get(s, &st);
		snprintf(key, sizeof(key), "%" PRIu32, s->id);
		rte_tel_data_start_dict(c);
		/* one entry a statement: the reply keeps their order */
		len = strlen(key) + 6 + tm_str(c, "name", s->name);
		len += tm_str(c, "kind", s->ops->kind ? s->ops->kind : "");
		/* what tells the loop of its completions: poll-only ("none")
		 * bounds every sleep */
		len += tm_str(c, "notify", s->has_fd ? "fd" : s->ops->bell ? "bell"
					 : s->failed ? "failed" : "none");
		for (size_t x = 0; x < RTE_DIM(xstat); x++)
			len += tm_u64(c, xstat[x].name, xstat_get(&st, x));
		if (used + len > TM_REPLY_BYTES || rte_tel_data_add_dict_container(d, key, c, 0) < 0) {
			rte_tel_data_free(c);
			break;
		}
		used += len;
	}
	if (i < l->n_src)
		rte_tel_data_add_dict_u64(d, "more", l->n_src - i);
	evd__registry_unlock();
	return 0;
}

static int
tm_xstats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct evd_loop *l;
	uint32_t entries = 0;

	RTE_SET_USED(cmd);
	l = lock_find(params);
	if (l == NULL)
		return -EINVAL;
	/* one dict of up to RTE_TEL_MAX_DICT_ENTRIES names: the first sources
	 * that fit whole */
	rte_tel_data_start_dict(d);
	for (uint32_t i = 0; i < l->n_src && entries + RTE_DIM(xstat) <= RTE_TEL_MAX_DICT_ENTRIES;
	     i++) {
		struct evd_source *s = l->src[i];
		struct evd_source_stats st;
		char kind[24], name[64];
		size_t k = 0;

		/* telemetry takes [A-Za-z0-9_] in names: anything else is '_' */
		for (const char *c = s->ops->kind ? s->ops->kind : "source"; *c && k < sizeof(kind) - 1;
		     c++)
			kind[k++] = (char)((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
					   (*c >= '0' && *c <= '9') ? *c : '_');
		kind[k] = '\0';
		evd_source_stats_get(s, &st);
		for (size_t x = 0; x < RTE_DIM(xstat); x++) {
			snprintf(name, sizeof(name), "%s_%" PRIu32 "_%s", kind, s->id, xstat[x].name);
			rte_tel_data_add_dict_u64(d, name, xstat_get(&st, x));
			entries++;
		}
	}
	evd__registry_unlock();
	return 0;
}

RTE_INIT(evd_telemetry_init)
{
	rte_telemetry_register_cmd("/evd/list", tm_list, "Returns the ids of the evd loops.");
	rte_telemetry_register_cmd("/evd/stats", tm_stats,
				   "Returns a loop's stats, mode, policy and what it learned. "
				   "Parameters: loop id or name");
	rte_telemetry_register_cmd("/evd/sources", tm_sources,
				   "Returns a loop's sources and their stats. Parameters: loop id or name");
	rte_telemetry_register_cmd("/evd/xstats", tm_xstats,
				   "Returns a loop's source counters by xstats-style name "
				   "(<kind>_<id>_<counter>). Parameters: loop id or name");
}
