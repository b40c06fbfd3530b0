/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A policy's keys: each KEY=VALUE of its spec checked against the keys it
 * takes and their ranges, for every policy's create.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "evd_private.h"

int
evd__policy_parse_keys(const char *policy, const struct evd_policy_param *p, unsigned int n,
		       const struct evd__policy_key *kv, unsigned int nkv)
{
	for (unsigned int i = 0; i < n; i++) {
		unsigned int k = 0;

		while (k < nkv && strcmp(p[i].key, kv[k].key) != 0)
			k++;
		if (k == nkv) {
			char list[128] = "";

			for (unsigned int j = 0; j < nkv; j++)
				if (kv[j].retired == NULL)
					snprintf(list + strlen(list), sizeof(list) - strlen(list),
						 "%s%s", list[0] ? ", " : "", kv[j].key);
			EVD_LOG(ERR, "policy %s: unknown key '%s' (keys: %s)", policy, p[i].key, list);
			return -EINVAL;
		}
		if (kv[k].retired != NULL) {
			EVD_LOG(ERR, "policy %s: %s=%" PRIu64 " is retired: %s", policy, p[i].key,
				p[i].value, kv[k].retired);
			return -EINVAL;
		}
		if (p[i].value < kv[k].lo || p[i].value > kv[k].hi) {
			EVD_LOG(ERR, "policy %s: %s=%" PRIu64 " out of range %" PRIu64 "..%" PRIu64,
				policy, p[i].key, p[i].value, kv[k].lo, kv[k].hi);
			return -EINVAL;
		}
		*kv[k].dst = p[i].value;
	}
	return 0;
}
