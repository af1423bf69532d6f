/* A second While over the sub-graphs of an existing one: see Note
 * [While again]. */
#ifndef TFM_GRAPH_WHILE_AGAIN_H
#define TFM_GRAPH_WHILE_AGAIN_H

#include "graph.h"

/* Note [While again]: the gradient of a graph tf.cond / tf.while_loop
 * (tfmini/ops/control_flow_grad.py) is a sub-graph traced once, with the
 * forward op, and run by a While node made when tape.gradient asks. A
 * second request (a persistent tape asked twice, tape.jacobian's one
 * request per element) cannot trace it again, as the Python that made
 * it may have moved on, and a sub-graph belongs to the node that sealed
 * it. Sealed graphs are immutable and refcounted, so this node shares
 * them: a copy of While node `like` of g (its sub-graphs, maps, captured
 * inputs and maximum_iterations) with new initial loop variables vars
 * (same count, dtypes and ranks as like's), ordered after g's earlier
 * side effects as every control flow node is. Returns the node or -1
 * with the error set. */
int tfm_graph_while_again(tfm_graph *g, int like, const tfm_ref *vars,
                          int nvars);

#endif
