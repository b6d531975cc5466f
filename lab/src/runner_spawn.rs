//! Spawning one node process of the run: its configuration (the design it
//! follows, its links through the proxies, the scaled client and work
//! timings, its history file) made into a command line for the
//! supervisor.

use super::*;

/// The role the run's nodes campaign for.
fn settings_role(plan: &LabPlan) -> &str {
    plan.settings.role.as_str()
}

impl Lab<'_> {
    /// Starts a new incarnation of `node`, configured as its design and
    /// the plan say; says which.
    pub(super) fn spawn(&mut self, node: usize) -> Result<String, RunError> {
        let incarnation = self.incarnations.entry(node).or_insert(0);
        *incarnation += 1;
        let incarnation = *incarnation;
        let store_clock = self.plan.store_clock.then_some(self.schema_name.as_str());
        let url = |server| {
            let proxy = &self.proxies[&Link { node, server }];
            if let (Server::LeaseStore, Some(_)) = (server, &self.etcd) {
                return format!("http://{}", proxy.address());
            }
            if let (Server::LeaseStore, Some(_)) = (server, &self.zookeeper) {
                return proxy.address().to_string();
            }
            let mut url = self.target.through(proxy.address());
            if let (Server::LeaseStore, Some(schema)) = (server, store_clock) {
                // The store's SQL reads the run's clock (crate::store_clock).
                url.push_str(&format!(" options='{}'", search_path_option(schema)));
            }
            url
        };
        let history = self
            .run_dir
            .join(format!("{}#{incarnation}.jsonl", self.node_name(node)));
        self.tails.follow(
            node as u32,
            format!("{}#{incarnation}", self.node_name(node)),
            history.clone(),
        );
        let settings = &self.plan.settings;
        let jitter_seed = child_seed(self.plan.seed, &[u64::MAX, node as u64, incarnation.into()]);
        let mut timings = settings.timings;
        if let Some(jitter) = timings.jitter.as_mut() {
            jitter.seed = jitter_seed;
        }
        // Redlock has no lease store: given the downstream's URL, unused.
        let lease_store = self.plan.servers[0].min(Server::Downstream);
        let config = NodeConfig {
            node: self.plan.nodes[node].id.clone(),
            incarnation,
            lease_url: url(lease_store),
            registry_url: url(lease_store),
            downstream_url: url(Server::Downstream),
            namespace: fenced::postgres::Namespace::new(&self.schema_name, "").map_err(infra)?,
            role: settings.role.clone(),
            resource: settings.resource.clone(),
            timings,
            heartbeat_interval: settings.heartbeat_interval,
            liveness_ttl: settings.liveness_ttl,
            write_interval: settings.write_interval,
            work_duration: settings.work_duration,
            // The scenario's client, scaled with the rest: what the
            // simulator's sessions model (`sim/src/hosts/session.rs`).
            query_timeout: settings.client.query_timeout,
            query_grace: settings.client.query_grace,
            connect_timeout: settings.client.connect_timeout,
            write_retries: settings.write_retries,
            fencing: settings.fencing,
            lock: match &self.plan.nodes[node].design {
                Design::ConnectionLock(lock) => Some(lock.clone()),
                _ => None,
            },
            etcd: match &self.plan.nodes[node].design {
                Design::Etcd(etcd) => Some(etcd.clone()),
                _ => None,
            },
            zookeeper: match (&self.plan.nodes[node].design, &self.zookeeper) {
                (Design::ZooKeeper(settings), Some(run)) => Some(crate::node::ZooKeeperNode {
                    settings: settings.clone(),
                    latch_path: crate::design_zookeeper::latch_path(
                        &self.schema_name,
                        settings_role(self.plan),
                    ),
                    zxid_base: run.zxid_base,
                }),
                _ => None,
            },
            redlock: self.redlock_node(node),
            history: Some(history.clone()),
            run_name: Some(self.plan.scenario.clone()),
            #[cfg(feature = "planted-bugs")]
            planted: self.planted,
        };
        let (args, mut env) = config.to_command();
        if self.plan.nodes[node].wall_steps {
            let file = wall_clock_file(&self.run_dir, &self.node_name(node));
            let extra = self.options.faketime.stepped_environment(&file);
            env.extend(extra.into_iter().map(|(k, v)| (k.into(), v.into())));
        } else if let Some(clock) = &self.plan.nodes[node].clock {
            let extra = self.options.faketime.environment(clock);
            env.extend(extra.into_iter().map(|(k, v)| (k.into(), v.into())));
        }
        let launch = Launch {
            node: self.node_name(node),
            incarnation,
            args,
            env,
        };
        let index = self.supervisor.spawn(launch).map_err(infra)?;
        let pid = self.supervisor.processes()[index].pid;
        Ok(format!(
            "started {}#{incarnation} (pid {pid})",
            self.node_name(node)
        ))
    }
}
