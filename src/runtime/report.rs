//! What rank 0 prints at the end of `train`: the summary (text with the
//! timing table, or `--json`), or for a run that ended early its status.

use super::TrainSummary;
use super::master::Interrupted;

/// `train --json` of a run that did not complete: its status
/// (`interrupted` or `failed`), the error, the iterations done and the trace.
/// The JSON summary of a run that did not complete: how it ended, the
/// iterations `completed` (as the trace holds them), and the trace when
/// this run wrote one (`None`: no file, or one it left as it was).
pub(super) fn ended_early(
    error: &anyhow::Error,
    completed: u64,
    trace: Option<&str>,
) -> serde_json::Value {
    let (status, iterations, signal) = match error.downcast_ref::<Interrupted>() {
        Some(stop) => ("interrupted", stop.iterations, Some(stop.signal)),
        None => ("failed", completed, None),
    };
    serde_json::json!({
        "status": status,
        "error": format!("{error:#}"),
        "iterations": iterations,
        "signal": signal,
        "trace": trace,
    })
}

pub(super) fn report(summary: &TrainSummary, json: bool) -> anyhow::Result<()> {
    if summary.final_train_loss.is_nan() {
        crate::errln!(
            "warning: the training loss at the final model is not known: a partition's loss did not \
             arrive in its evaluation (a worker stopped taking tasks?) or a signal stopped it; \
             final_train_loss is null, never an older iteration's value"
        );
    }
    if json {
        let mut value = serde_json::to_value(summary)?;
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("status".to_string(), "completed".into());
        }
        crate::outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    print_timing(summary);
    // A classifier's test accuracy at the final model (a linear model has none).
    let accuracy = if summary.final_test_accuracy.is_finite() {
        format!(", test accuracy {:.4}", summary.final_test_accuracy)
    } else {
        String::new()
    };
    crate::outln!(
        "trained {} on {} workers for {} iterations: mean iteration {:.4} s (send to updated θ; a decodable set after {:.4} s), final train loss {:.6e}, test loss {:.6e}{accuracy}",
        summary.scheme,
        summary.workers,
        summary.iterations,
        summary.mean_iteration_s,
        summary.mean_decodable_s,
        summary.final_train_loss,
        summary.final_test_loss
    );
    crate::outln!(
        "mean recovered fraction {:.3}, stale results dropped {}, emulation overruns {}, tasks abandoned by workers {}",
        summary.mean_recovered_fraction,
        summary.stale_dropped,
        summary.overruns,
        summary.tasks_abandoned
    );
    if let Some(bytes) = summary.master_inbound_bytes_per_iteration {
        crate::outln!(
            "master inbound {:.4e} bytes per iteration (runtime.aggregate: {})",
            bytes,
            summary.aggregate.unwrap_or_default().name()
        );
    }
    if let Some(trace) = &summary.trace {
        crate::outln!("trace: {trace}");
    }
    Ok(())
}

/// The timing summary, like PETSc's -log_view: every named event with its
/// total, count, mean and share of the run's wall time (the workers' compute:
/// share of the workers' combined time).
fn print_timing(summary: &TrainSummary) {
    let wall = summary.wall_s;
    crate::outln!(
        "{:<28} {:>12} {:>9} {:>12} {:>8}",
        "event",
        "total s",
        "count",
        "mean s",
        "% wall"
    );
    for e in &summary.timing {
        let capacity = if e.event.starts_with("compute") {
            wall * summary.workers as f64
        } else {
            wall
        };
        crate::outln!(
            "{:<28} {:>12.6} {:>9} {:>12.3e} {:>7.2}%",
            e.event,
            e.total_s,
            e.count,
            e.total_s / e.count.max(1) as f64,
            100.0 * e.total_s / capacity
        );
    }
}
