/**
 * @name SQL query built from user-controlled sources
 * @description Building a SQL query from user input without parameters allows injection.
 * @id sentinel/py/sql-injection
 * @kind path-problem
 * @problem.severity error
 * @security-severity 8.8
 * @tags security external/cwe/cwe-089
 */

import python
import semmle.python.dataflow.new.DataFlow
import semmle.python.dataflow.new.TaintTracking
import semmle.python.dataflow.new.RemoteFlowSources
import semmle.python.Concepts

module SqlConfig implements DataFlow::ConfigSig {
  predicate isSource(DataFlow::Node node) { node instanceof RemoteFlowSource }

  predicate isSink(DataFlow::Node node) { node = any(SqlExecution e).getSql() }
}

module SqlFlow = TaintTracking::Global<SqlConfig>;

import SqlFlow::PathGraph

from SqlFlow::PathNode source, SqlFlow::PathNode sink
where SqlFlow::flowPath(source, sink)
select sink.getNode(), source, sink, "This SQL query depends on a $@.", source.getNode(),
  "user-provided value"
