"""The listener rules of the Kafka cluster model (filter kafka_cluster.py).

kafka_listeners, kafka_controller_listener and a host's kafka_listener_overrides come from the inventory as
written: a value of the wrong shape is a problem naming the variable and the fix, never a raised error, so the
preflight reports every mistake in one run. Kept out of the model's file so that it reads as the order of its
rules; pure functions over plain data, unit-tested through the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.kafkalab.kafka.plugins.module_utils.inventory import as_int, is_port, valid_address

LISTENER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
SECURITY_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
# What a kafka_listeners item may say. `external`: advertised under a per-host address outside the
# cluster network (NAT, load balancer); `client_networks`: who may reach it (firewall role).
LISTENER_KEYS = {
    "name",
    "port",
    "protocol",
    "bind_host",
    "advertised_host",
    "advertised_port",
    "external",
    "client_networks",
    "client_auth",
}
# What kafka_controller_listener may say: `client_auth` (TLS only) is ssl.client.auth on the listener.
CONTROLLER_LISTENER_KEYS = {"name", "port", "protocol", "bind_host", "client_auth"}
TLS_CLIENT_AUTH = ("required", "requested", "none")
# What kafka_listener_overrides may change for one host.
OVERRIDE_KEYS = {"advertised_host", "advertised_port", "bind_host", "port"}


def _host_listeners(
    host: str,
    listeners: list[Mapping[str, Any]],
    overrides: Mapping[str, Any],
    address: str | None,
    problems: list[str],
) -> list[dict[str, Any]]:
    """The client/inter-broker listeners of one host, per-host overrides applied."""
    known = {str(item.get("name")) for item in listeners}
    for name, override in overrides.items():
        if name not in known:
            problems.append(
                f"{host}: kafka_listener_overrides names listener '{name}' (it would be advertised in "
                f"advertised.listeners), which kafka_listeners does not define (defined: "
                f"{', '.join(sorted(known))}). Fix the name or add the listener to kafka_listeners."
            )
        unknown = sorted(set(dict(override or {})) - OVERRIDE_KEYS)
        if unknown:
            problems.append(
                f"{host}: kafka_listener_overrides.{name} has unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(OVERRIDE_KEYS))})."
            )
    result = []
    for item in listeners:
        name = str(item.get("name"))
        own = dict(overrides.get(name) or {})
        merged = {**item, **own}
        if item.get("external") and not own.get("advertised_host"):
            # The cluster address is exactly what an outside client cannot reach: never fall back to it.
            problems.append(
                f"{host}: listener {name} is external (advertised to clients outside the cluster network), so "
                f"this host needs kafka_listener_overrides.{name}.advertised_host (and advertised_port if the "
                f"NAT or load balancer maps the port): the address outside clients reach it by. Set it in "
                f"host_vars/{host}."
            )
        advertised_host = merged.get("advertised_host") or ("" if item.get("external") else address)
        # A host without any address is reported once, by the caller.
        if advertised_host and not valid_address(str(advertised_host)):
            problems.append(
                f"{host}: advertised address '{advertised_host}' of listener {name} is not a valid host name or IP."
            )
        result.append(
            {
                "name": name,
                "protocol": str(merged.get("protocol", "PLAINTEXT")),
                "bind_host": str(merged.get("bind_host") or ""),
                "port": as_int(merged.get("port")),
                "advertised_host": str(advertised_host or ""),
                "advertised_port": as_int(merged.get("advertised_port") or merged.get("port")),
                "external": bool(item.get("external")),
                # Who may reach it (the firewall role's input): None means the `clients` networks.
                "client_networks": item.get("client_networks"),
                # TLS only: ssl.client.auth on this listener (clients: none unless the inventory asks).
                "client_auth": str(item.get("client_auth") or "none"),
            }
        )
    return result


def _check_listener(item: Mapping[str, Any], is_controller: bool, problems: list[str]) -> None:
    """One listener's own settings: protocol, client_auth, name, port and keys."""
    protocol = str(item.get("protocol", "PLAINTEXT"))
    if protocol == "SASL_PLAINTEXT":
        problems.append(
            f"listener {item.get('name')}: protocol SASL_PLAINTEXT would carry every record and the SCRAM "
            "exchange in the clear; this project runs SCRAM over TLS only. Use SASL_SSL."
        )
    if protocol == "SASL_SSL" and is_controller:
        problems.append(
            "kafka_controller_listener: protocol SASL_SSL is not supported: controllers and brokers authenticate "
            "each other on the controller listener by their certificates (mutual TLS). Use SSL."
        )
    client_auth = item.get("client_auth")
    if client_auth is not None and (protocol != "SSL" or str(client_auth) not in TLS_CLIENT_AUTH):
        problems.append(
            f"listener {item.get('name')}: client_auth '{client_auth}' needs protocol SSL and one of "
            f"{', '.join(TLS_CLIENT_AUTH)} (ssl.client.auth; default: required on the controller listener, mutual "
            "TLS; none on the others)."
        )
    name = str(item.get("name"))
    if not LISTENER_NAME.match(name):
        problems.append(
            f"listener name '{name}' must be upper case letters, digits and _ "
            "(kafka_listeners / kafka_controller_listener)."
        )
    if str(item.get("protocol", "PLAINTEXT")) not in SECURITY_PROTOCOLS:
        problems.append(
            f"listener {name}: protocol '{item.get('protocol')}' is not one of {sorted(SECURITY_PROTOCOLS)}."
        )
    if not is_port(item.get("port")):
        problems.append(f"listener {name}: port '{item.get('port')}' is not a TCP port number.")
    known_keys = CONTROLLER_LISTENER_KEYS if is_controller else LISTENER_KEYS
    unknown = sorted(set(item) - known_keys)
    if unknown:
        problems.append(
            f"listener {name}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known_keys))})."
        )
    networks = item.get("client_networks")
    if networks is not None and not isinstance(networks, list):
        problems.append(f"listener {name}: client_networks must be a list of networks (CIDR), e.g. [192.0.2.0/24].")


def _check_listener_definitions(
    listeners: list[Mapping[str, Any]],
    controller_listener: Mapping[str, Any] | None,
    inter_broker_name: str,
    problems: list[str],
) -> None:
    """controller_listener is None in ZooKeeper mode, where no node opens it."""
    names = [str(item.get("name")) for item in listeners]
    for item in [*listeners, *([controller_listener] if controller_listener is not None else [])]:
        _check_listener(item, item is controller_listener, problems)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        problems.append(
            f"kafka_listeners defines {', '.join(duplicates)} more than once: listener names must be unique."
        )
    if controller_listener is not None and str(controller_listener.get("name")) in names:
        problems.append(
            f"kafka_controller_listener.name '{controller_listener.get('name')}' is also in kafka_listeners: "
            "the controller listener must be its own listener, never advertised to clients."
        )
    if inter_broker_name not in names:
        problems.append(
            f"kafka_inter_broker_listener_name '{inter_broker_name}' is not defined in kafka_listeners "
            f"(defined: {', '.join(names)})."
        )
    elif any(item.get("external") for item in listeners if str(item.get("name")) == inter_broker_name):
        problems.append(
            f"kafka_inter_broker_listener_name '{inter_broker_name}' names an external listener: brokers would "
            "replicate through NAT addresses meant for outside clients. Replicate over an internal listener."
        )


def _listener_list(value: Any, variable: str, problems: list[str]) -> list[Mapping[str, Any]]:
    """The listeners of kafka_listeners, each a mapping; anything else is reported, not raised."""
    if value in (None, ""):
        return []
    if not isinstance(value, list):
        problems.append(
            f"{variable} must be a list of listeners (each with name, port, protocol), not {value!r}: e.g. "
            "[{name: INTERNAL, port: 9092, protocol: PLAINTEXT}]."
        )
        return []
    good = []
    for index, item in enumerate(value):
        if isinstance(item, Mapping):
            good.append(item)
        else:
            problems.append(f"{variable}[{index}] is {item!r}, not a listener (a mapping with name, port, protocol).")
    return good


def _host_overrides(host: str, value: Any, problems: list[str]) -> dict[str, Mapping[str, Any]]:
    """A host's kafka_listener_overrides: listener name -> mapping; anything else is reported, not raised."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        problems.append(
            f"{host}: kafka_listener_overrides must be a mapping of listener name to settings, not {value!r}: "
            f"e.g. {{EXTERNAL: {{advertised_host: kafka1.example.com}}}}. Fix it in host_vars/{host}."
        )
        return {}
    overrides = {}
    for name, override in value.items():
        if isinstance(override, Mapping):
            overrides[str(name)] = override
        else:
            problems.append(
                f"{host}: kafka_listener_overrides.{name} must be a mapping (advertised_host, advertised_port, "
                f"bind_host, port), not {override!r}."
            )
    return overrides


def _check_controller_listener(
    settings: Mapping[str, Any], zookeeper_mode: bool, problems: list[str]
) -> dict[str, Any]:
    """kafka_controller_listener as a dict ({} when it is not a mapping: reported unless in ZooKeeper mode)."""
    raw_controller = settings.get("controller_listener") or {}
    controller_listener = dict(raw_controller) if isinstance(raw_controller, Mapping) else {}
    if not zookeeper_mode and not controller_listener:
        problems.append(
            f"kafka_controller_listener must be a mapping (name, port, protocol), not {raw_controller!r}: "
            "e.g. {name: CONTROLLER, port: 9093, protocol: PLAINTEXT}."
        )
    return controller_listener


def _check_advertised_unique(brokers: list[str], nodes: dict[str, dict[str, Any]], problems: list[str]) -> None:
    """No two broker listeners advertise one address and port."""
    advertised_by: dict[tuple[str, int], str] = {}
    for host in brokers:
        for item in nodes.get(host, {}).get("listeners", []):
            if not item["advertised_host"] or item["advertised_port"] is None:
                continue
            key = (item["advertised_host"], item["advertised_port"])
            where = f"{host} {item['name']}"
            if key in advertised_by:
                problems.append(
                    f"{host}: listener {item['name']} advertises {key[0]}:{key[1]}, which {advertised_by[key]} "
                    "advertises too: clients would reach one broker for two. Give each its own advertised_port "
                    f"(kafka_listener_overrides.{item['name']}.advertised_port)."
                )
            else:
                advertised_by[key] = where


def _check_listeners(
    settings: Mapping[str, Any], zookeeper_mode: bool, problems: list[str]
) -> tuple[list[Mapping[str, Any]], dict[str, Any], str]:
    """kafka_listeners, kafka_controller_listener and kafka_inter_broker_listener_name, read and checked."""
    listeners = _listener_list(settings.get("listeners"), "kafka_listeners", problems)
    controller_listener = _check_controller_listener(settings, zookeeper_mode, problems)
    inter_broker_name = str(settings.get("inter_broker_listener_name") or "")
    # ZooKeeper mode opens no controller listener: there is none to check.
    checked_controller = controller_listener if controller_listener and not zookeeper_mode else None
    _check_listener_definitions(listeners, checked_controller, inter_broker_name, problems)
    return listeners, controller_listener, inter_broker_name
