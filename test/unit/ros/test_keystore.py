"""The DDS-Security keystore (inertia_id_ros.ros.keystore, ``inertia-id keystore create``): files
as ROS 2 reads them, certificates and signatures that verify against the CA, and permissions
that grant each role what it may do and nothing more, read back from the written XML."""

from __future__ import annotations

import fnmatch
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cryptography import x509

from inertia_id_ros import cli
from inertia_id_ros.errors import KeystoreError
from inertia_id_ros.ros.keystore import (
    DEFAULT_OBSERVER,
    DEFAULT_OPERATOR,
    NODE_ENCLAVE,
    SIMULATOR_ENCLAVE,
    create_keystore,
)

ENCLAVE_FILES = (
    "cert.pem",
    "key.pem",
    "identity_ca.cert.pem",
    "permissions_ca.cert.pem",
    "governance.p7s",
    "permissions.p7s",
    "permissions.xml",
)
"""What rmw_security_common looks for in an enclave's folder (and the unsigned permissions)."""


@pytest.fixture(scope="module")
def keystore(tmp_path_factory):
    return create_keystore(
        tmp_path_factory.mktemp("ks") / "keystore",
        domain_id=42,
        operators=[DEFAULT_OPERATOR, "/line/operator_2"],
    )


def load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_layout_roles_and_private_keys(keystore):
    assert keystore.roles == {
        NODE_ENCLAVE: "node",
        SIMULATOR_ENCLAVE: "simulator",
        DEFAULT_OPERATOR: "operator",
        "/line/operator_2": "operator",
        DEFAULT_OBSERVER: "observer",
    }
    root = keystore.directory
    for path in (
        root / "public" / "ca.cert.pem",
        root / "private" / "ca.key.pem",
        root / "enclaves" / "governance.xml",
        root / "enclaves" / "governance.p7s",
    ):
        assert path.is_file(), path
    for enclave in keystore.roles:
        folder = keystore.enclave_dir(enclave)
        assert sorted(p.name for p in folder.iterdir() if p.is_file()) == sorted(ENCLAVE_FILES)
        assert stat.S_IMODE((folder / "key.pem").stat().st_mode) == 0o600
    assert keystore.enclave_dir("/line/operator_2") == root / "enclaves" / "line" / "operator_2"
    assert stat.S_IMODE((root / "private" / "ca.key.pem").stat().st_mode) == 0o600
    assert keystore.environment() == {
        "ROS_SECURITY_KEYSTORE": str(root.resolve()),
        "ROS_SECURITY_ENABLE": "true",
        "ROS_SECURITY_STRATEGY": "Enforce",
    }


def test_certificates_are_issued_by_the_ca_to_the_enclave(keystore):
    ca = load_cert(keystore.directory / "public" / "ca.cert.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for enclave in keystore.roles:
        cert = load_cert(keystore.enclave_dir(enclave) / "cert.pem")
        cert.verify_directly_issued_by(ca)  # raises if the signature or issuer is wrong
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert cert.subject.rfc4514_string() == f"CN={enclave}"
        assert cert.not_valid_before_utc < cert.not_valid_after_utc
        grant = ET.parse(keystore.enclave_dir(enclave) / "permissions.xml").find(
            "permissions/grant"
        )
        assert grant.findtext("subject_name") == f"CN={enclave}"
        assert grant.findtext("validity/not_before") == cert.not_valid_before_utc.strftime(
            "%Y-%m-%dT%H:%M:%S"
        )
        assert {d.text for d in grant.iter("id")} == {"42"}
        for name in ("identity_ca.cert.pem", "permissions_ca.cert.pem"):
            assert load_cert(keystore.enclave_dir(enclave) / name) == ca


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="no openssl command to verify S/MIME signatures with"
)
def test_governance_and_permissions_are_signed_by_the_ca(keystore, tmp_path):
    """As DDS-Security reads them: OpenSSL's S/MIME verification against the CA, the signed
    text being the XML document (canonical CRLF line ends)."""
    ca = keystore.directory / "public" / "ca.cert.pem"
    signed = [
        (
            keystore.directory / "enclaves" / "governance.p7s",
            keystore.directory / "enclaves" / "governance.xml",
        )
    ]
    signed += [
        (keystore.enclave_dir(e) / "permissions.p7s", keystore.enclave_dir(e) / "permissions.xml")
        for e in keystore.roles
    ]
    for p7s, xml in signed:
        out = tmp_path / "content"
        done = subprocess.run(
            [
                "openssl",
                "smime",
                "-verify",
                "-text",
                "-in",
                str(p7s),
                "-CAfile",
                str(ca),
                "-out",
                str(out),
            ],
            capture_output=True,
        )
        assert done.returncode == 0, done.stderr
        assert out.read_bytes().replace(b"\r\n", b"\n") == xml.read_bytes()
    tampered = tmp_path / "tampered.p7s"
    tampered.write_bytes(signed[1][0].read_bytes().replace(b"rt/*", b"rq/*", 1))
    assert (
        subprocess.run(
            [
                "openssl",
                "smime",
                "-verify",
                "-text",
                "-in",
                str(tampered),
                "-CAfile",
                str(ca),
                "-out",
                str(tmp_path / "x"),
            ],
            capture_output=True,
        ).returncode
        != 0
    )


def test_governance_admits_only_authenticated_encrypted_participants(keystore):
    rule = ET.parse(keystore.directory / "enclaves" / "governance.xml").find(
        "domain_access_rules/domain_rule"
    )
    assert rule.findtext("domains/id") == "42"
    assert rule.findtext("allow_unauthenticated_participants") == "false"
    assert rule.findtext("enable_join_access_control") == "true"
    topic = rule.find("topic_access_rules/topic_rule")
    assert topic.findtext("topic_expression") == "*"
    for tag in (
        "enable_read_access_control",
        "enable_write_access_control",
        "enable_discovery_protection",
    ):
        assert topic.findtext(tag) == "true"
    assert topic.findtext("data_protection_kind") == "ENCRYPT"


def allowed(keystore, enclave: str, direction: str, topic: str) -> bool:
    """Whether the written permissions of ``enclave`` let it ``direction`` (publish or
    subscribe) ``topic``: the first rule in the grant whose expressions match decides, else
    the default (DDS-Security 9.4.1.3)."""
    grant = ET.parse(keystore.enclave_dir(enclave) / "permissions.xml").find("permissions/grant")
    for rule in grant:
        if rule.tag in ("allow_rule", "deny_rule") and any(
            fnmatch.fnmatchcase(topic, t.text) for t in rule.iterfind(f"{direction}/*/topic")
        ):
            return rule.tag == "allow_rule"
    return grant.findtext("default") == "ALLOW"


def may_call(keystore, enclave: str, service: str) -> bool:
    return allowed(keystore, enclave, "publish", f"rq{service}Request") and allowed(
        keystore, enclave, "subscribe", f"rr{service}Reply"
    )


def may_serve(keystore, enclave: str, service: str) -> bool:
    return allowed(keystore, enclave, "subscribe", f"rq{service}Request") and allowed(
        keystore, enclave, "publish", f"rr{service}Reply"
    )


@pytest.mark.parametrize(
    "service", ["excite", "stop", "tare", "identify", "set_parameters", "set_parameters_atomically"]
)
def test_only_operators_call_the_control_services(keystore, service):
    for operator in (DEFAULT_OPERATOR, "/line/operator_2"):
        assert may_call(keystore, operator, f"/inertia_id/{service}")
    for enclave in (DEFAULT_OBSERVER, SIMULATOR_ENCLAVE):
        assert not may_call(keystore, enclave, f"/inertia_id/{service}")


def test_everyone_reads_and_only_the_node_and_simulator_serve_and_publish(keystore):
    callers = (DEFAULT_OPERATOR, DEFAULT_OBSERVER)
    for enclave in keystore.roles:
        assert allowed(keystore, enclave, "subscribe", "rt/inertia_id/estimate")
        assert allowed(keystore, enclave, "subscribe", "rt/diagnostics")
        assert allowed(keystore, enclave, "publish", "rt/rosout")
        assert allowed(keystore, enclave, "publish", "ros_discovery_info")
    for enclave in callers:
        assert may_call(keystore, enclave, "/inertia_id/get_parameters")
        assert may_serve(keystore, enclave, f"/{enclave[1:]}_tool/get_parameters")  # its own
        for node in ("inertia_id", "inertia_id_inputs", "inertia_id_sim"):  # no impersonation
            assert not may_serve(keystore, enclave, f"/{node}/excite")
            assert not may_serve(keystore, enclave, f"/{node}/get_parameters")
        for topic in (
            "rt/inertia_id/estimate",
            "rt/joint_states",
            "rt/ft_sensor/wrench",
            "rt/joint_trajectory_controller/joint_trajectory",
        ):
            assert not allowed(keystore, enclave, "publish", topic)
    assert not may_call(keystore, DEFAULT_OBSERVER, "/inertia_id_sim/set_parameters")
    assert may_serve(keystore, NODE_ENCLAVE, "/inertia_id/excite")
    assert may_serve(keystore, NODE_ENCLAVE, "/inertia_id_inputs/get_type_description")
    assert not may_serve(keystore, NODE_ENCLAVE, "/inertia_id_sim/get_parameters")
    assert may_serve(keystore, SIMULATOR_ENCLAVE, "/inertia_id_sim/get_parameters")
    assert allowed(
        keystore, NODE_ENCLAVE, "publish", "rt/joint_trajectory_controller/joint_trajectory"
    )
    assert allowed(keystore, SIMULATOR_ENCLAVE, "publish", "rt/joint_states")


def test_refuses_a_used_directory_and_bad_or_repeated_names(tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("x")
    with pytest.raises(KeystoreError, match="not empty"):
        create_keystore(tmp_path / "used")
    for name in ("operator", "/2nd", "/a//b", "/a/", "/a-b"):
        with pytest.raises(KeystoreError, match="invalid enclave name"):
            create_keystore(tmp_path / "new", operators=[name])
    with pytest.raises(KeystoreError, match="given twice"):
        create_keystore(tmp_path / "new", operators=["/x"], observers=["/x"])
    with pytest.raises(KeystoreError, match="given twice"):
        create_keystore(tmp_path / "new", operators=[NODE_ENCLAVE])
    assert not (tmp_path / "new").exists()


def test_cli_creates_a_keystore_and_says_how_to_use_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "17")
    code = cli.main(
        [
            "keystore",
            "create",
            str(tmp_path / "ks"),
            "--operator",
            "/cell/op",
            "--observer",
            "/viewer",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "/cell/op" in out and "operator" in out and "/viewer" in out
    assert "export ROS_SECURITY_ENABLE=true" in out and "--enclave /inertia_id" in out
    grant = ET.parse(tmp_path / "ks" / "enclaves" / "cell" / "op" / "permissions.xml")
    assert grant.findtext("permissions/grant/allow_rule/domains/id") == "17"
    assert not (tmp_path / "ks" / "enclaves" / "operator").exists()
    assert cli.main(["keystore", "create", str(tmp_path / "ks")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert cli.main(["keystore", "create", str(tmp_path / "k2"), "--domain-id", "300"]) == 2
    assert "--domain-id" in capsys.readouterr().err
