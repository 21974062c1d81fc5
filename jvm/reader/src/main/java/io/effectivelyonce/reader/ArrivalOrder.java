package io.effectivelyonce.reader;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker;
import org.apache.spark.sql.catalyst.plans.logical.Deduplicate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.streaming.OutputMode;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's checks of a streaming plan, less the one sort the stream's first-copy state needs
 * (eo/core/transforms/dedup.py `first_copy_state`).
 *
 * <p>That state is Spark's own deduplication, which keeps the first row of a key its task meets.
 * In front of it, the rows of each shuffle partition are sorted into arrival order (partition,
 * offset), so that the first row met is the first copy. Spark refuses every sort in a streaming
 * plan when the query starts, although a sort within the partitions of one micro-batch is
 * planned and run as in a batch job. The query then starts with that check off, after this one
 * has run every other rule on the plan.
 */
public final class ArrivalOrder {
    private ArrivalOrder() {}

    /** Throws Spark's own AnalysisException for anything unsupported, but that sort. */
    public static void check(Dataset<?> plan) {
        LogicalPlan analyzed = plan.queryExecution().analyzed();
        UnsupportedOperationChecker.checkForStreaming(analyzed.transformUp(new WithoutArrivalSort()), OutputMode.Append());
    }

    /** A deduplication over a sort within partitions over a repartition: the sort taken out. */
    private static final class WithoutArrivalSort extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
        @Override
        public boolean isDefinedAt(LogicalPlan node) {
            return node instanceof Deduplicate dedup
                    && dedup.child() instanceof Sort sort
                    && !sort.global()
                    && sort.child() instanceof RepartitionByExpression;
        }

        @Override
        public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, scala.Function1<A1, B1> otherwise) {
            if (!isDefinedAt(node)) {
                return otherwise.apply(node);
            }
            Deduplicate dedup = (Deduplicate) node;
            @SuppressWarnings("unchecked")
            B1 stripped = (B1) new Deduplicate(dedup.keys(), ((Sort) dedup.child()).child());
            return stripped;
        }
    }
}
