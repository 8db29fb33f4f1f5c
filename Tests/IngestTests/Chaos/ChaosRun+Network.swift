import AsyncHTTPClient
import Foundation
import NIOHTTP1
import Synchronization
import Testing
import TestSupport

// The network namespace and lossy link a chaos run's `pushav serve` runs behind; a type of its own, apart to keep ChaosRun.swift short.

/// The network namespace `pushav serve` runs in during a chaos run, and the lossy link to its ingests.
final class ChaosNetwork: @unchecked Sendable {
    // @unchecked: `ingestPorts` is set once before the run, `lossy` only from the run's tasks in turn.
    let name: String
    let hostAddress: String
    let namespaceAddress: String
    private let hostLink: String
    private let namespaceLink: String
    var ingestPorts: [Int] = []
    /// `tc netem` (loss and delay) when the kernel has it, else an nftables rule dropping packets at random.
    private(set) var method = ""

    var launcher: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    init(index: Int) {
        let n = index % 200 + 20
        name = "pushav-chaos-\(getpid())-\(index)"
        hostLink = "pvh\(getpid() % 10000)x\(index)"
        namespaceLink = "pvn\(getpid() % 10000)x\(index)"
        hostAddress = "10.231.\(n).1"
        namespaceAddress = "10.231.\(n).2"
    }

    func create() async throws {
        // A test process that crashed left its namespaces (named by its pid) behind, with their host-side links holding
        // the same addresses as this run's: they would take its traffic. Their processes are killed and they go.
        _ = try await Shell.run("""
            for ns in $(ip netns list | awk '{print $1}' | grep '^pushav-chaos-'); do
                owner=${ns#pushav-chaos-}; owner=${owner%%-*}
                if ! kill -0 "$owner" 2>/dev/null; then
                    ip netns pids "$ns" | xargs -r kill -9 || true
                    ip netns del "$ns"
                fi
            done
            true
            """)
        _ = try await Shell.run("""
            set -e
            ip netns add \(name)
            ip link add \(hostLink) type veth peer name \(namespaceLink)
            ip link set \(namespaceLink) netns \(name)
            ip addr add \(hostAddress)/24 dev \(hostLink)
            ip link set \(hostLink) up
            ip netns exec \(name) ip addr add \(namespaceAddress)/24 dev \(namespaceLink)
            ip netns exec \(name) ip link set \(namespaceLink) up
            ip netns exec \(name) ip link set lo up
            """)
        let netem = try? await Shell.run("ip netns exec \(name) tc qdisc add dev \(namespaceLink) root netem delay 1ms "
                                         + "&& ip netns exec \(name) tc qdisc del dev \(namespaceLink) root")
        method = netem != nil ? "tc netem" : "nftables"
    }

    func destroy() async {
        _ = try? await Shell.run("ip netns del \(name); ip link del \(hostLink) 2>/dev/null || true")
    }

    /// Drops 10 % of the packets between `pushav serve` and its ingests (both ways), with netem also 40 ms ± 20 ms of
    /// delay; the API's packets pass untouched.
    func setLossy(_ on: Bool) async throws {
        let ports = ingestPorts.map(String.init).joined(separator: ", ")
        let exec = "ip netns exec \(name)"
        if method == "tc netem" {
            // A prio qdisc sends the ingests' traffic (by destination address) to the netem band only.
            _ = try await Shell.run(on ? """
                \(exec) tc qdisc add dev \(namespaceLink) root handle 1: prio
                \(exec) tc qdisc add dev \(namespaceLink) parent 1:3 handle 30: netem loss 10% delay 40ms 20ms
                \(exec) tc filter add dev \(namespaceLink) protocol ip parent 1:0 prio 3 u32 match ip dst \(hostAddress)/32 flowid 1:3
                """ : "\(exec) tc qdisc del dev \(namespaceLink) root 2>/dev/null || true")
        } else {
            _ = try await Shell.run(on ? """
                \(exec) nft add table inet chaos
                \(exec) nft add chain inet chaos out '{ type filter hook output priority 0; }'
                \(exec) nft add chain inet chaos in '{ type filter hook input priority 0; }'
                \(exec) nft add rule inet chaos out ip daddr \(hostAddress) tcp dport '{ \(ports) }' numgen random mod 100 '<' 10 drop
                \(exec) nft add rule inet chaos in ip saddr \(hostAddress) tcp sport '{ \(ports) }' numgen random mod 100 '<' 10 drop
                """ : "\(exec) nft delete table inet chaos 2>/dev/null || true")
        }
    }
}
