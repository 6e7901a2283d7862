"""Subjects as code: what the schema_registry_subjects module accepts, refuses, plans and says, without a registry.

The registry's answers are plain data here (what the module reads: versions, own level, latest type, lookup);
the module's calls against a real Apicurio Registry 3.0.9 are checked by hand (see the module's documentation).
"""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.kafkalab.kafka.plugins.module_utils.schema_registry_plan import (
    ADVICE,
    Current,
    check,
    describe,
    diff,
    incompatible,
    plan,
    registered,
    results,
    schema_text,
    steps,
)

V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
ORDERS = {"name": "orders-value", "schema": V1}
# orders-value holds versions 1 and 2, the declared text is not one of them, no level of its own.
HAS_TWO = Current(versions=(1, 2), all_versions=(1, 2), schema_type="AVRO")
REGISTERED = Current(versions=(1, 2), all_versions=(1, 2), schema_type="AVRO", match={"version": 2, "id": 7})


def test_a_valid_declaration_has_no_problems() -> None:
    declared = [
        ORDERS,
        {"name": "users-value", "type": "JSON", "schema": '{"type":"object"}', "compatibility": "FULL"},
        {"name": "events-value", "type": "PROTOBUF", "schema": 'syntax = "proto3"; message E { int64 id = 1; }'},
        {"name": "legacy-value", "state": "absent"},
    ]
    assert check(declared, "BACKWARD") == []


@pytest.mark.parametrize(
    "subject,expected",
    [
        ({"name": "s", "schema": "{not json"}, "subject 's': schema is not valid JSON"),
        ({"name": "s"}, "subject 's': schema is required when state is present"),
        ({"name": "s", "schema": V1, "type": "XML"}, "subject 's': type 'XML' must be one of AVRO, JSON, PROTOBUF"),
        ({"name": "s", "schema": V1, "compatibility": "STRICT"}, "subject 's': compatibility 'STRICT' must be one of"),
        ({"name": "s", "schema": V1, "state": "gone"}, "subject 's': state 'gone' must be present or absent"),
        ({"name": "s", "schema": V1, "version": 3}, "subjects[0]: unknown field(s) version"),
        ({"schema": V1}, "subjects[0]: name is required"),
    ],
)
def test_invalid_declarations_name_the_subject_and_field(subject: dict[str, Any], expected: str) -> None:
    problems = check([subject])
    assert any(expected in p for p in problems), problems


def test_a_subject_declared_twice_is_refused() -> None:
    assert check([ORDERS, ORDERS]) == ["subject 'orders-value': declared more than once."]


def test_an_unknown_global_level_is_refused() -> None:
    assert check([], "STRICT") == [
        "compatibility 'STRICT' must be one of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, "
        "FULL, FULL_TRANSITIVE (or empty)."
    ]


def test_a_schema_given_as_data_is_registered_as_compact_json_in_its_own_field_order() -> None:
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    assert schema_text(schema) == V1
    assert schema_text(V1 + "\n") == V1 + "\n"  # text is kept exactly: the registry compares exact text


def test_a_new_subject_registers_version_1_first_then_gets_its_level_without_a_check() -> None:
    result, refusals = plan([{**ORDERS, "compatibility": "NONE"}], {"orders-value": Current()}, "BACKWARD", None)
    assert refusals == []
    item = result.subjects[0]
    assert (item.register, item.next_version, item.check_level) == (True, 1, None)
    # Apicurio 3.0.9 answers 404 to a subject-level NONE before the subject exists; version 1 checks against nothing.
    assert steps(result) == [("register", "orders-value"), ("level", "orders-value", "", "NONE")]


def test_an_existing_subject_gets_its_level_before_its_new_version_which_is_checked_under_it() -> None:
    result, _ = plan([{**ORDERS, "compatibility": "FULL"}], {"orders-value": HAS_TWO}, "BACKWARD", None)
    item = result.subjects[0]
    assert steps(result) == [("level", "orders-value", "", "FULL"), ("register", "orders-value")]
    assert (item.check_level, item.check_now, item.next_version) == ("FULL", False, 3)
    assert item.level_source == "declared for this subject"


def test_a_check_under_the_level_already_in_force_runs_before_any_change() -> None:
    result, _ = plan([ORDERS], {"orders-value": HAS_TWO}, "BACKWARD", None)
    item = result.subjects[0]
    assert (item.check_level, item.check_now) == ("BACKWARD", True)
    assert item.level_source == "the global level; the subject has none of its own"


def test_a_declared_level_equal_to_the_level_in_force_still_checks_before_any_change() -> None:
    have = Current(versions=(1,), all_versions=(1,), own_level="FULL", schema_type="AVRO")
    result, _ = plan([{**ORDERS, "compatibility": "FULL"}], {"orders-value": have}, "NONE", None)
    assert steps(result) == [("register", "orders-value")]
    assert (result.subjects[0].check_level, result.subjects[0].check_now) == ("FULL", True)


def test_a_new_global_level_comes_first_and_decides_the_check_of_subjects_without_their_own() -> None:
    result, _ = plan([ORDERS], {"orders-value": HAS_TWO}, "NONE", "FORWARD")
    assert steps(result) == [("global", "NONE", "FORWARD"), ("register", "orders-value")]
    assert (result.subjects[0].check_level, result.subjects[0].check_now) == ("FORWARD", False)


def test_a_subjects_own_level_outranks_a_new_global_level() -> None:
    have = Current(versions=(1,), all_versions=(1,), own_level="FULL", schema_type="AVRO")
    result, _ = plan([ORDERS], {"orders-value": have}, "NONE", "FORWARD")
    assert (result.subjects[0].check_level, result.subjects[0].check_now) == ("FULL", True)


def test_a_new_version_under_level_none_needs_no_check() -> None:
    result, _ = plan([{**ORDERS, "compatibility": "NONE"}], {"orders-value": HAS_TWO}, "BACKWARD", None)
    assert result.subjects[0].register and result.subjects[0].check_level is None


def test_a_second_run_with_the_same_declaration_changes_nothing() -> None:
    have = Current(versions=(1, 2), all_versions=(1, 2), own_level="FULL", schema_type="AVRO", match={"version": 2})
    result, refusals = plan([{**ORDERS, "compatibility": "FULL"}], {"orders-value": have}, "BACKWARD", "BACKWARD")
    assert refusals == [] and not result.changed and steps(result) == [] and describe(result, "BACKWARD") == []


def test_a_schema_already_registered_as_an_older_version_is_not_registered_again() -> None:
    have = Current(versions=(1, 2, 3), all_versions=(1, 2, 3), schema_type="AVRO", match={"version": 1, "id": 1})
    result, _ = plan([ORDERS], {"orders-value": have}, "NONE", None)
    assert not result.changed


def test_the_next_version_counts_soft_deleted_versions() -> None:
    have = Current(versions=(3,), all_versions=(1, 2, 3), schema_type="AVRO")
    result, _ = plan([ORDERS], {"orders-value": have}, "NONE", None)
    assert result.subjects[0].next_version == 4


def test_a_subject_with_only_soft_deleted_versions_is_new_again() -> None:
    have = Current(versions=(), all_versions=(1, 2), own_level="FULL")
    result, _ = plan([{**ORDERS, "compatibility": "BACKWARD"}], {"orders-value": have}, "NONE", None)
    assert steps(result) == [("register", "orders-value"), ("level", "orders-value", "FULL", "BACKWARD")]
    assert result.subjects[0].next_version == 3 and result.subjects[0].check_level is None


@pytest.mark.parametrize(
    "have,expected",
    [
        (Current(versions=(1, 2), all_versions=(1, 2)), [("delete", "gone-value")]),
        (Current(versions=(), all_versions=(1,)), [("purge", "gone-value")]),
        (Current(), []),
    ],
    ids=["active: soft then permanent delete", "soft-deleted: permanent delete", "unknown: nothing"],
)
def test_a_subject_declared_absent_is_deleted_only_if_it_exists(have: Current, expected: list[tuple[str]]) -> None:
    result, _ = plan([{"name": "gone-value", "state": "absent"}], {"gone-value": have}, "NONE", None)
    assert steps(result) == expected and result.changed == bool(expected)


def test_a_declared_type_other_than_the_subjects_is_refused() -> None:
    declared = [{"name": "orders-value", "type": "JSON", "schema": '{"type":"object"}'}]
    _, refusals = plan(declared, {"orders-value": HAS_TWO}, "NONE", None)
    assert refusals == [
        "subject 'orders-value': declared type JSON, but its versions are AVRO; a subject holds one type. "
        "Declare its type, or delete the subject (state: absent) first."
    ]


def test_undeclared_levels_are_left_alone() -> None:
    have = Current(versions=(1,), all_versions=(1,), own_level="FULL", schema_type="AVRO", match={"version": 1})
    result, _ = plan([ORDERS], {"orders-value": have}, "BACKWARD", None)
    assert not result.changed


def test_the_changes_read_as_lines_in_the_order_they_are_made() -> None:
    declared = [{**ORDERS, "compatibility": "FULL"}, {"name": "old-value", "state": "absent"}]
    current = {"orders-value": HAS_TWO, "old-value": Current(versions=(1,), all_versions=(1,))}
    result, _ = plan(declared, current, "NONE", "BACKWARD")
    assert describe(result, "NONE") == [
        "global compatibility NONE -> BACKWARD",
        "orders-value: compatibility (global NONE) -> FULL",
        "orders-value: register version 3",
        "old-value: delete (versions 1)",
    ]
    assert registered("orders-value", 3, 12) == "orders-value: registered version 3 (id 12)"


def test_the_diff_shows_levels_and_versions_before_and_after() -> None:
    declared = [
        {**ORDERS, "compatibility": "FULL"},
        {"name": "old-value", "state": "absent"},
        {"name": "x-value", "schema": V1},
    ]
    current = {
        "orders-value": HAS_TWO,
        "old-value": Current(versions=(), all_versions=(1,)),
        "x-value": Current(),
    }
    result, _ = plan(declared, current, "NONE", None)
    assert diff(result, "NONE") == {
        "before": "global compatibility: NONE\n"
        "orders-value: compatibility (global NONE); versions 1, 2\n"
        "old-value: (soft-deleted versions 1)\n"
        "x-value: (absent)\n",
        "after": "global compatibility: NONE\n"
        "orders-value: compatibility FULL; versions 1, 2, 3\n"
        "old-value: (absent)\n"
        "x-value: compatibility (global NONE); versions 1\n",
    }


def test_an_incompatible_schema_is_explained_with_version_level_rule_reasons_and_what_to_do() -> None:
    result, _ = plan([ORDERS], {"orders-value": HAS_TWO}, "BACKWARD", None)
    dry_run = {
        "title": "Incompatible artifact: orders-value [AVRO], num of incompatible diffs: {1}",
        "detail": "Incompatible artifact: orders-value [AVRO], num of incompatible diffs: {1}, list of diff types: "
        "[qty at /fields/2] Causes: qty at /fields/2",
        "causes": [{"description": "qty", "context": "/fields/2"}],
    }
    assert incompatible(result.subjects[0], 2, dry_run) == (
        "subject 'orders-value': the declared schema would be version 3, but it is not BACKWARD compatible against "
        "version 2 (the global level; the subject has none of its own): consumers using the new schema must read "
        "data written with the latest version. The registry says: Incompatible artifact: orders-value [AVRO], num of "
        "incompatible diffs: {1}, list of diff types: [qty at /fields/2] Causes: qty at /fields/2. " + ADVICE
    )


def test_causes_the_detail_leaves_out_are_added_and_transitive_levels_name_every_version() -> None:
    result, _ = plan([{**ORDERS, "compatibility": "FULL_TRANSITIVE"}], {"orders-value": HAS_TWO}, "NONE", None)
    message = incompatible(
        result.subjects[0], 2, {"detail": "Incompatible artifact", "causes": [{"description": "id", "context": "/f"}]}
    )
    assert "not FULL_TRANSITIVE compatible against versions 1, 2 (declared for this subject)" in message
    assert "The registry says: Incompatible artifact (causes: id at /f)." in message
    assert message.endswith(ADVICE)


def test_the_result_names_each_subjects_version_id_and_level_in_force() -> None:
    declared = [
        {**ORDERS, "compatibility": "FULL"},
        {"name": "x-value", "schema": V1},
        {"name": "g", "state": "absent"},
    ]
    current = {"orders-value": REGISTERED, "x-value": Current(), "g": Current()}
    result, _ = plan(declared, current, "BACKWARD", None)
    assert results(result, "BACKWARD") == [
        {"name": "orders-value", "state": "present", "version": 2, "id": 7, "compatibility": "FULL"},
        {"name": "x-value", "state": "present", "version": 1, "id": None, "compatibility": "BACKWARD"},
        {"name": "g", "state": "absent", "version": None, "id": None, "compatibility": None},
    ]
