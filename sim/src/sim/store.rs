//! The lease-store host (lease store and node registry) and the downstream host.

use super::*;

impl Simulation {
    // ----- the lease store -----

    pub(super) fn store_receive(&mut self, msg: Message) {
        let now = fenced::Instant::from_nanos(self.now);
        match msg {
            Message::LeaseRequest {
                pid,
                incarnation,
                owner,
                id,
                ttl,
            } => {
                let answer = self
                    .store
                    .state
                    .leases
                    .try_acquire_or_renew(&self.role, &owner, ttl, now);
                let to = Dest::Process { pid, incarnation };
                let from = self.hosts.sender_ref(pid, incarnation, &owner);
                match answer {
                    Ok(result) => {
                        self.observers.emit(
                            self.now,
                            &Observation::LeaseHandled {
                                from,
                                request: id.0,
                                result: &result,
                            },
                        );
                        self.send(STORE_ENDPOINT, to, Message::LeaseResponse { id, result });
                    }
                    Err(error) => {
                        let text = error.to_string();
                        self.observers.emit(
                            self.now,
                            &Observation::LeaseRejected {
                                from,
                                request: id.0,
                                error: &text,
                            },
                        );
                        self.send(STORE_ENDPOINT, to, Message::LeaseFailed { id });
                    }
                }
            }
            Message::Release {
                pid,
                incarnation,
                owner,
                token,
            } => {
                let result = self
                    .store
                    .state
                    .leases
                    .release(&self.role, &owner, token, now);
                let from = self.hosts.sender_ref(pid, incarnation, &owner);
                self.observers.emit(
                    self.now,
                    &Observation::ReleaseHandled {
                        from,
                        token,
                        released: result == ReleaseResult::Released,
                    },
                );
            }
            Message::Heartbeat { pid, node } => {
                let joined = self
                    .store
                    .state
                    .registry
                    .heartbeat(&self.hosts.nodes[node as usize].id, now)
                    == fenced::Heartbeat::Joined;
                self.observers.emit(
                    self.now,
                    &Observation::HeartbeatHandled {
                        from: self.hosts.process_ref(pid),
                        joined,
                    },
                );
                self.drain_membership();
            }
            Message::LeaseResponse { .. } | Message::LeaseFailed { .. } | Message::Write { .. } => {
                debug_assert!(false, "the lease store only receives requests");
            }
        }
    }

    pub(super) fn drain_membership(&mut self) {
        while let Some(change) = self.store.state.registry.poll_change() {
            match change {
                MembershipChange::Joined { node, .. } => {
                    if let Some(i) = self.hosts.node_index(node.as_str()) {
                        let node = self.hosts.node_ref(i);
                        self.observers
                            .emit(self.now, &Observation::MemberJoined(node));
                    }
                }
                MembershipChange::Left { node, .. } => {
                    if let Some(i) = self.hosts.node_index(node.as_str()) {
                        let node = self.hosts.node_ref(i);
                        self.observers
                            .emit(self.now, &Observation::MemberLeft(node));
                    }
                }
            }
        }
        // Counting the live set costs O(nodes): only for pictures.
        if self.observers.timeline.is_some() {
            let live = self
                .store
                .state
                .registry
                .live_count(fenced::Instant::from_nanos(self.now));
            self.observers
                .emit(self.now, &Observation::LiveMembers(live as u64));
        }
        let next = self
            .store
            .state
            .registry
            .next_timeout()
            .map(|t| t.as_nanos());
        // Arm only when nothing earlier is armed: a timer that fires before
        // the (since refreshed) earliest expiry just re-arms. Re-arming on
        // every heartbeat instead would leave one stale timer per heartbeat
        // in the queue — thousands in a large fleet.
        let armed = self.store.state.registry_timer_at;
        if next.is_some() && (armed.is_none() || next < armed) {
            if let Some(at) = next {
                self.store.state.registry_generation += 1;
                self.store.state.registry_timer_at = Some(at);
                self.queue.push(
                    at.max(self.now),
                    Event::RegistryTimer {
                        generation: self.store.state.registry_generation,
                    },
                );
            }
        }
    }

    // ----- the downstream -----

    pub(super) fn downstream_receive(&mut self, msg: Message) {
        let Message::Write {
            pid,
            incarnation,
            owner,
            token,
            unit,
        } = msg
        else {
            debug_assert!(false, "the downstream only receives writes");
            return;
        };
        let outcome = self.downstream.state.write(
            &self.resource,
            token,
            &owner,
            unit,
            fenced::Instant::from_nanos(self.now),
        );
        let from = self.hosts.sender_ref(pid, incarnation, &owner);
        self.observers.emit(
            self.now,
            &Observation::WriteHandled {
                from,
                token,
                unit,
                outcome: &outcome,
            },
        );
    }
}
