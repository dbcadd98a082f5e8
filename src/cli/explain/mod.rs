//! `gradcode explain --received 1,2,5`: does this arrival set decode, and how.
//! gc-dc has its own view ([`dc`]): how the clusters are formed.

use clap::Args;

mod dc;

use crate::cli::decoding::{decode_report, print_text};
use crate::cli::{ConfigArgs, load, parse_messages, parse_workers, print_warnings};
use crate::coding::{Arrival, RoundContext, dynamic_clustering};
use crate::error::InputError;

/// The flags of `explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub args: ConfigArgs,
    /// Workers whose results arrived, 1-based, in arrival order (e.g. 1,2,5).
    /// Required except for gc-dc, where it decodes with the clusters formed.
    #[arg(long, value_name = "IDS")]
    pub received: Option<String>,
    /// gc-dc: the workers the master believes straggle, 1-based (e.g. 3,5,6,7,8).
    #[arg(long, value_name = "IDS")]
    pub stragglers: Option<String>,
    /// gc-dc: estimated rates of workers 1..K (e.g. 2.5,0.1,...); a worker
    /// with rate < scheme.straggler_threshold straggles; fastest chosen first.
    #[arg(long, value_name = "RATES")]
    pub rates: Option<String>,
}

pub(super) fn run(flags: &ExplainArgs) -> anyhow::Result<()> {
    let args = &flags.args;
    let setup = load(args)?;
    print_warnings(&setup.loaded);
    let mut scheme = setup.scheme;
    if dynamic_clustering(&*scheme).is_some() {
        return dc::run(flags, scheme.as_mut());
    }
    let kind = scheme.kind().name();
    let given = [
        ("--stragglers", &flags.stragglers),
        ("--rates", &flags.rates),
    ];
    for (flag, given) in given {
        if given.is_some() {
            return Err(InputError::new(
                flag,
                format!("applies only to scheme.kind = gc-dc, not {kind}"),
            )
            .into());
        }
    }
    let received = flags.received.as_deref().ok_or_else(|| {
        InputError::new(
            "--received",
            format!("is required for scheme.kind = {kind}"),
        )
    })?;
    let plan = scheme.plan_round(&RoundContext::default());
    let multi_message = plan.tasks.iter().any(|t| t.messages.len() > 1);
    // Multi-message schemes: each mention of a worker is its next message.
    let arrivals: Vec<Arrival> = if multi_message {
        parse_messages("--received", received, &plan)?
    } else {
        parse_workers("--received", received, scheme.workers())?
            .into_iter()
            .map(Arrival::only)
            .collect()
    };
    // With a [network]: what it costs these messages, sent together.
    let network =
        crate::sim::communication::communication(&setup.loaded.config, &plan, Some(&arrivals))?;
    let report = decode_report(scheme.as_mut(), &plan, &arrivals);
    if args.json {
        let json = WithNetwork {
            report: &report,
            network: network.as_ref(),
        };
        crate::outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print_text(&report);
        if let Some(n) = &network {
            crate::outln!(
                "network: {}",
                n.describe(&format!("the {} received", n.messages))
            );
        }
    }
    Ok(())
}

/// The decode report, with the network's cost when the config has one
/// (absent: the JSON is the report alone).
#[derive(serde::Serialize)]
struct WithNetwork<'a, R: serde::Serialize> {
    #[serde(flatten)]
    report: &'a R,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<&'a crate::sim::communication::Communication>,
}
