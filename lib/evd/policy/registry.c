/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The policy registry and the spec parser: a spec names a registered policy
 * and gives its keys; the registry makes the instance.
 *
 * Spec grammar: NAME [ ":" KEY "=" VALUE { "," KEY "=" VALUE } ]
 *   NAME: [a-z0-9_-]+   KEY: [a-z0-9_]+   VALUE: unsigned decimal integer
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_memory.h>

#include "evd_costs_private.h"
#include "evd_private.h"

#define MAX_POLICIES 32
#define MAX_PARAMS 16
#define SPEC_MAX 256

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct evd_policy_ops *registry[MAX_POLICIES] = {
	&evd__adaptive_policy, &evd__poll_policy, &evd__intr_policy,
	/* the baselines follow (baselines.c) */
};

static pthread_once_t baselines_once = PTHREAD_ONCE_INIT;

static void
add_baselines(void)
{
	for (int i = 0; evd__baseline_policies[i] != NULL; i++)
		for (int k = 0; k < MAX_POLICIES; k++)
			if (registry[k] == NULL) {
				registry[k] = evd__baseline_policies[i];
				break;
			}
}

static bool
valid_chars(const char *s, bool dash)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_' ||
		      (dash && *s == '-')))
			return false;
	return true;
}

/* Keys: [a-z0-9_]+. */
static bool
valid_word(const char *s)
{
	return valid_chars(s, false);
}

/* Policy names may also hold '-' (ski-rand). */
static bool
valid_name(const char *s)
{
	return valid_chars(s, true);
}

int
evd_policy_register(const struct evd_policy_ops *ops)
{
	int rc = -ENOSPC;

	if (ops == NULL || ops->name == NULL || ops->decide == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_policy_register: %s", ops == NULL ? "NULL ops"
					: ops->name == NULL ? "ops without a name" : "ops without decide");
	if (!valid_name(ops->name) || strlen(ops->name) >= EVD_NAME_MAX)
		return EVD_ARG_ERR(-EINVAL, "evd_policy_register: name '%.*s' is not a policy name",
				   EVD_NAME_MAX, ops->name);
	pthread_once(&baselines_once, add_baselines);
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < MAX_POLICIES; i++) {
		if (registry[i] != NULL && strcmp(registry[i]->name, ops->name) == 0) {
			rc = -EEXIST;
			break;
		}
		if (registry[i] == NULL) {
			registry[i] = ops;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	if (rc < 0)
		EVD_LOG(ERR, "evd_policy_register %s: %s", ops->name, rc == -EEXIST
			? "a policy of that name is registered already"
			: "the registry is full");
	return rc;
}

/* The registered names, ", "-separated, into buf (cut to len). */
static void
names(char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < MAX_POLICIES && registry[i] != NULL && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", registry[i]->name);
	pthread_mutex_unlock(&registry_lock);
}

static const struct evd_policy_ops *
lookup(const char *name)
{
	const struct evd_policy_ops *ops = NULL;

	pthread_once(&baselines_once, add_baselines);
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < MAX_POLICIES && registry[i] != NULL; i++)
		if (strcmp(registry[i]->name, name) == 0) {
			ops = registry[i];
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	return ops;
}

struct parsed_spec {
	char buf[SPEC_MAX];
	const char *name;
	struct evd_policy_param params[MAX_PARAMS];
	unsigned int n;
};

static int
parse_spec(const char *spec, struct parsed_spec *ps)
{
	char *colon, *item, *save = NULL;
	long at;

	if (spec == NULL || *spec == '\0') {
		EVD_LOG(ERR, "policy spec is empty");
		return -EINVAL;
	}
	if (strlen(spec) >= sizeof(ps->buf)) {
		EVD_LOG(ERR, "policy spec longer than %d bytes", SPEC_MAX - 1);
		return -EINVAL;
	}
	/* before any line below echoes it */
	at = evd__control_char_at(spec, SIZE_MAX);
	if (at >= 0) {
		EVD_LOG(ERR, "policy spec: control character 0x%02x at byte %ld",
			(unsigned char)spec[at], at);
		return -EINVAL;
	}
	strcpy(ps->buf, spec);
	ps->n = 0;
	ps->name = ps->buf;
	colon = strchr(ps->buf, ':');
	if (colon != NULL)
		*colon = '\0';
	/* names are registered in lower case; "Adaptive" means adaptive */
	for (char *c = ps->buf; *c != '\0'; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!valid_name(ps->name)) {
		EVD_LOG(ERR, "policy spec '%s': bad policy name '%s'", spec, ps->name);
		return -EINVAL;
	}
	if (colon == NULL)
		return 0;
	if (colon[1] == '\0') {
		EVD_LOG(ERR, "policy spec '%s': nothing after ':'", spec);
		return -EINVAL;
	}
	for (item = strtok_r(colon + 1, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *end;
		unsigned long long v;

		if (eq == NULL) {
			EVD_LOG(ERR, "policy spec '%s': key '%s' has no value (KEY=VALUE)", spec, item);
			return -EINVAL;
		}
		*eq = '\0';
		if (!valid_word(item)) {
			EVD_LOG(ERR, "policy spec '%s': bad key '%s'", spec, item);
			return -EINVAL;
		}
		errno = 0;
		v = strtoull(eq + 1, &end, 10);
		if (eq[1] == '\0' || !isdigit((unsigned char)eq[1]) || *end != '\0' || errno != 0) {
			EVD_LOG(ERR, "policy spec '%s': key '%s': bad value '%s' (unsigned integer)",
				spec, item, eq + 1);
			return -EINVAL;
		}
		for (unsigned int i = 0; i < ps->n; i++)
			if (strcmp(ps->params[i].key, item) == 0) {
				EVD_LOG(ERR, "policy spec '%s': key '%s' given twice", spec, item);
				return -EINVAL;
			}
		if (ps->n == MAX_PARAMS) {
			EVD_LOG(ERR, "policy spec '%s': more than %d keys", spec, MAX_PARAMS);
			return -EINVAL;
		}
		ps->params[ps->n].key = item;
		ps->params[ps->n].value = v;
		ps->n++;
	}
	/* strtok_r skips empty items: "a:x=1,,y=2" or a trailing ',' */
	if (strstr(spec, ",,") != NULL || spec[strlen(spec) - 1] == ',' || strstr(spec, ":,")) {
		EVD_LOG(ERR, "policy spec '%s': empty key", spec);
		return -EINVAL;
	}
	return 0;
}

static int
instantiate(const char *spec, bool calibrate, struct evd_policy *out)
{
	struct parsed_spec ps;
	const struct evd_policy_ops *ops;
	void *state = NULL;
	int rc;

	rc = parse_spec(spec, &ps);
	if (rc < 0)
		return rc;
	ops = lookup(ps.name);
	if (ops == NULL) {
		char known[256];

		names(known, sizeof(known));
		EVD_LOG(ERR, "policy spec '%s': unknown policy '%s' (policies: %s)", spec, ps.name,
			known);
		return -ENOENT;
	}
	if (ops->create != NULL) {
		rc = ops->create(ps.params, ps.n,
				 calibrate && ops->needs_env ? evd_policy_env_get() : &evd__env_defaults,
				 &state);
		/* -EINVAL is logged by the policy, naming the key; another errno
		 * (a registered policy's own) is told as a refused spec */
		if (rc == -ENOMEM)
			EVD_LOG(ERR, "policy %s: no memory for its state", ps.name);
		else if (rc < 0 && rc != -EINVAL)
			EVD_LOG(ERR, "policy %s: its create refused the spec '%s' (%s)", ps.name, spec,
				strerror(-rc));
		if (rc < 0)
			return rc == -ENOMEM ? rc : -EINVAL;
	} else if (ps.n > 0) {
		EVD_LOG(ERR, "policy %s: unknown key '%s' (it takes no keys)", ps.name,
			ps.params[0].key);
		return -EINVAL;
	}
	if (out != NULL) {
		out->ops = ops;
		out->state = state;
	} else if (ops->destroy != NULL) {
		ops->destroy(state);
	}
	return 0;
}

/* set while a loop makes its policy, on the thread that makes it */
static __thread const struct evd__mem *making_for;

struct evd__mem
evd__policy_mem(void)
{
	return making_for != NULL ? *making_for : (struct evd__mem){ .socket = SOCKET_ID_ANY };
}

int
evd__policy_create(const char *spec, const struct evd__mem *mem, struct evd_policy *out)
{
	int rc;

	making_for = mem;
	rc = instantiate(spec, true, out);
	making_for = NULL;
	return rc;
}

void
evd__policy_destroy(struct evd_policy *p)
{
	if (p->ops != NULL && p->ops->destroy != NULL)
		p->ops->destroy(p->state);
	p->ops = NULL;
	p->state = NULL;
}

int
evd_policy_create(const char *spec, struct evd_policy **out)
{
	struct evd_policy *p;
	int rc;

	if (out == NULL)
		return EVD_ARG_ERR(-EINVAL, "evd_policy_create %s: NULL out", spec != NULL ? spec : "");
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	rc = instantiate(spec, true, p);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void
evd_policy_destroy(struct evd_policy *p)
{
	if (p == NULL)
		return;
	evd__policy_destroy(p);
	free(p);
}

const char *
evd_policy_name(const struct evd_policy *p)
{
	if (p == NULL) {
		EVD_LOG(ERR, "evd_policy_name: policy is NULL");
		return NULL;
	}
	return p->ops->name;
}

enum evd_action
evd_policy_decide(struct evd_policy *p, const struct evd_policy_input *in, uint64_t *arg_ns)
{
	*arg_ns = 0;
	return p->ops->decide(p->state, in, arg_ns);
}

void
evd_policy_events(struct evd_policy *p, uint64_t now_ns, uint32_t n)
{
	if (p->ops->on_events != NULL)
		p->ops->on_events(p->state, now_ns, n);
}

void
evd_policy_source_events(struct evd_policy *p, uint64_t now_ns, uint32_t source_id, uint32_t n)
{
	if (p->ops->on_source_events != NULL)
		p->ops->on_source_events(p->state, now_ns, source_id, n);
}

void
evd_policy_wake(struct evd_policy *p, uint64_t now_ns, uint64_t slept_ns, enum evd_wake_reason why)
{
	if (p->ops->on_wake != NULL)
		p->ops->on_wake(p->state, now_ns, slept_ns, why);
}

int
evd_policy_validate(const char *spec)
{
	return instantiate(spec, false, NULL);
}

int
evd_policy_needs_env(const char *spec)
{
	struct parsed_spec ps;
	int rc = evd_policy_validate(spec);

	if (rc < 0)
		return rc;
	(void)parse_spec(spec, &ps); /* valid: it parses, and names a policy */
	return lookup(ps.name)->needs_env != 0;
}
