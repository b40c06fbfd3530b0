/* SPDX-License-Identifier: BSD-3-Clause */
/* An RC QP connected to itself. See ibv_loopback.h. */
#include <errno.h>
#include <string.h>

#include "ibv_loopback.h"

int
ibv_loopback_connect(struct ibv_context *ctx, struct ibv_qp *qp, uint8_t port)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_qp_attr a;
	int rc;

	if (ibv_query_port(ctx, port, &pa) != 0 || ibv_query_gid(ctx, port, 0, &gid) != 0)
		return -EIO;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (rc != 0)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = pa.lid;
	a.ah_attr.port_num = port;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET || pa.lid == 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.hop_limit = 1;
	}
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc != 0)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	return rc != 0 ? -rc : 0;
}
