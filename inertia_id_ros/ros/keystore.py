"""A DDS-Security keystore for the node, the simulator and their callers (SROS2 layout).

ROS 2 runs a process under DDS-Security when ``ROS_SECURITY_ENABLE=true``: its participant
authenticates with the certificate of its *enclave* (``--ros-args --enclave /name``) and may
only publish and subscribe what the enclave's signed permissions grant. The keystore::

    DIR/public/ca.cert.pem                   the CA (identity and permissions), self-signed
    DIR/private/ca.key.pem                   its key (keep it off the robot)
    DIR/enclaves/governance.xml, .p7s        the domain's rules, S/MIME-signed by the CA
    DIR/enclaves/<name>/cert.pem, key.pem    the enclave's identity (CN=<name>), signed by the CA
    DIR/enclaves/<name>/permissions.xml, .p7s       what it may publish and subscribe
    DIR/enclaves/<name>/governance.p7s, identity_ca.cert.pem, permissions_ca.cert.pem
                                             copies, so an enclave's folder deploys on its own

Roles (:data:`ROLES`), by the DDS topics they grant (``rt/`` topics, ``rq/<service>Request``
and ``rr/<service>Reply`` service topics, ``ros_discovery_info``):

- ``node``, ``simulator``: every topic; they alone serve their own services.
- ``operator``: calls every service of the node and the simulator, among them
  :data:`CONTROL_SERVICES` (``~/excite`` moves the robot); reads every topic.
- ``observer``: reads every topic (``~/estimate``, ``~/excitation``, ``/diagnostics``, ...) and
  calls the read-only services (:data:`READ_SERVICES`); no control service.

Callers publish no data topic but ``/rosout`` and ``/parameter_events``, and serve their own
nodes' services under any name but the node's and the simulator's (no one can impersonate them).
A participant without a certificate of this CA does not join the domain (governance:
unauthenticated participants refused, discovery and data encrypted).
"""

from __future__ import annotations

import datetime
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from inertia_id_ros.errors import KeystoreError

NODE_NAME = "inertia_id"
"""The identification node's name (its services are ``/inertia_id/...``)."""
SIMULATOR_NAME = "inertia_id_sim"
"""The simulator node's name."""
SERVED_BY = {"node": (NODE_NAME, f"{NODE_NAME}_inputs"), "simulator": (SIMULATOR_NAME,)}
"""The ROS nodes of the node's and the simulator's processes, whose services (parameters, type
descriptions, ...) only that process may serve (``inertia_id_inputs``: the node's input
subscriptions, :class:`inertia_id_ros.ros.node.InertiaIdNode`)."""

NODE_ENCLAVE = "/inertia_id"
SIMULATOR_ENCLAVE = "/inertia_id_sim"
DEFAULT_OPERATOR = "/operator"
DEFAULT_OBSERVER = "/observer"

ROLES = ("node", "simulator", "operator", "observer")

CONTROL_SERVICES = (
    "excite",
    "stop",
    "tare",
    "identify",
    "set_parameters",
    "set_parameters_atomically",
)
"""The node's services only an ``operator`` may call (they move the robot, change its state or
its parameters). The simulator's parameter setting too."""
READ_SERVICES = (
    "get_parameters",
    "get_parameter_types",
    "list_parameters",
    "describe_parameters",
    "get_type_description",
)
"""Services every caller may call on the node and the simulator."""

DISCOVERY_TOPIC = "ros_discovery_info"
"""The ROS graph topic the Fast DDS and Cyclone DDS middlewares publish (no ``rt/`` prefix)."""

DEFAULT_VALID_DAYS = 3650
"""Lifetime of the certificates and the permissions (days)."""

_ENCLAVE_NAME = re.compile(r"^(/[A-Za-z_][A-Za-z0-9_]*)+$")


def ros_domain_id() -> int:
    """This process's ROS domain: ``ROS_DOMAIN_ID``, else 0."""
    return int(os.environ.get("ROS_DOMAIN_ID") or 0)


def security_environment(keystore: Path) -> dict[str, str]:
    """The environment variables that put a ROS 2 process under DDS-Security with ``keystore``
    (enforced: a process whose enclave is missing does not start); give each process its
    enclave with ``--ros-args --enclave NAME``."""
    return {
        "ROS_SECURITY_KEYSTORE": str(Path(keystore).resolve()),
        "ROS_SECURITY_ENABLE": "true",
        "ROS_SECURITY_STRATEGY": "Enforce",
    }


@dataclass(frozen=True)
class Rules:
    """DDS topic expressions (``fnmatch`` patterns) a grant denies or allows, per direction. The
    deny rule comes first: the first rule whose expression matches a topic decides."""

    allow_publish: tuple[str, ...]
    allow_subscribe: tuple[str, ...]
    deny_publish: tuple[str, ...] = ()
    deny_subscribe: tuple[str, ...] = ()


def _requests(node: str, services: Iterable[str]) -> tuple[str, ...]:
    return tuple(f"rq/{node}/{service}Request" for service in services)


def role_rules(role: str) -> Rules:
    """The topics an enclave of ``role`` (one of :data:`ROLES`) may publish and subscribe."""
    if role in SERVED_BY:
        own = SERVED_BY[role]
        return Rules(
            allow_publish=("rt/*", *(f"rr/{name}/*" for name in own), DISCOVERY_TOPIC),
            allow_subscribe=("rt/*", *(f"rq/{name}/*" for name in own), DISCOVERY_TOPIC),
        )
    if role not in ("operator", "observer"):
        raise KeystoreError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    served = SERVED_BY["node"] + SERVED_BY["simulator"]
    deny_publish = tuple(f"rr/{name}/*" for name in served)  # no one else serves them
    if role == "observer":
        deny_publish += _requests(NODE_NAME, CONTROL_SERVICES) + _requests(
            SIMULATOR_NAME, ("set_parameters", "set_parameters_atomically")
        )
    return Rules(
        allow_publish=("rt/rosout", "rt/parameter_events", "rq/*", "rr/*", DISCOVERY_TOPIC),
        allow_subscribe=("rt/*", "rq/*", "rr/*", DISCOVERY_TOPIC),
        deny_publish=deny_publish,
        deny_subscribe=tuple(f"rq/{name}/*" for name in served),
    )


def governance_xml(domain_id: int) -> bytes:
    """The domain's governance document (OMG DDS-Security 1.1, 9.4.1.2): on ``domain_id`` only
    authenticated participants join, access control applies to every topic, discovery,
    liveliness and data are encrypted and every RTPS message is signed."""
    root = ET.Element(
        "dds",
        {
            "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
            "xsi:noNamespaceSchemaLocation": "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd",
        },
    )
    rule = ET.SubElement(ET.SubElement(root, "domain_access_rules"), "domain_rule")
    _domains(rule, domain_id)
    for tag, text in (
        ("allow_unauthenticated_participants", "false"),
        ("enable_join_access_control", "true"),
        ("discovery_protection_kind", "ENCRYPT"),
        ("liveliness_protection_kind", "ENCRYPT"),
        ("rtps_protection_kind", "SIGN"),
    ):
        ET.SubElement(rule, tag).text = text
    topic = ET.SubElement(ET.SubElement(rule, "topic_access_rules"), "topic_rule")
    for tag, text in (
        ("topic_expression", "*"),
        ("enable_discovery_protection", "true"),
        ("enable_liveliness_protection", "true"),
        ("enable_read_access_control", "true"),
        ("enable_write_access_control", "true"),
        ("metadata_protection_kind", "ENCRYPT"),
        ("data_protection_kind", "ENCRYPT"),
    ):
        ET.SubElement(topic, tag).text = text
    return _document(root)


def permissions_xml(
    enclave: str,
    rules: Rules,
    domain_id: int,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
) -> bytes:
    """The permissions document (OMG DDS-Security 1.1, 9.4.1.3) of ``enclave``: one grant for
    the subject ``CN=<enclave>``, valid from ``not_before`` to ``not_after`` (UTC) on
    ``domain_id``, the deny rule before the allow rule, anything else denied."""
    root = ET.Element(
        "dds",
        {
            "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
            "xsi:noNamespaceSchemaLocation": "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd",
        },
    )
    grant = ET.SubElement(ET.SubElement(root, "permissions"), "grant", {"name": enclave})
    ET.SubElement(grant, "subject_name").text = f"CN={enclave}"
    validity = ET.SubElement(grant, "validity")
    ET.SubElement(validity, "not_before").text = _xml_time(not_before)
    ET.SubElement(validity, "not_after").text = _xml_time(not_after)
    for tag, publish, subscribe in (
        ("deny_rule", rules.deny_publish, rules.deny_subscribe),
        ("allow_rule", rules.allow_publish, rules.allow_subscribe),
    ):
        if publish or subscribe:
            rule = ET.SubElement(grant, tag)
            _domains(rule, domain_id)
            for direction, topics in (("publish", publish), ("subscribe", subscribe)):
                if topics:
                    listed = ET.SubElement(ET.SubElement(rule, direction), "topics")
                    for topic in topics:
                        ET.SubElement(listed, "topic").text = topic
    ET.SubElement(grant, "default").text = "DENY"
    return _document(root)


def _domains(parent: ET.Element, domain_id: int) -> None:
    ET.SubElement(ET.SubElement(parent, "domains"), "id").text = str(int(domain_id))


def _document(root: ET.Element) -> bytes:
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n"


def _xml_time(t: datetime.datetime) -> str:
    """``xs:dateTime`` in UTC, whole seconds."""
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def check_enclave_name(name: str) -> str:
    """``name`` if it is an enclave name (``/a`` or ``/a/b``: segments of letters, digits and
    ``_``, not starting with a digit), else :class:`~inertia_id_ros.errors.KeystoreError`."""
    if not _ENCLAVE_NAME.match(name):
        raise KeystoreError(
            f"invalid enclave name {name!r}: give an absolute name such as "
            "/operator (segments of letters, digits and _, not starting with "
            "a digit)"
        )
    return name


@dataclass(frozen=True)
class Keystore:
    """A keystore on disk: its directory and its enclaves' roles (name -> role)."""

    directory: Path
    roles: dict[str, str]

    def enclave_dir(self, enclave: str) -> Path:
        """The folder of ``enclave`` (``enclaves/<name>``)."""
        return self.directory / "enclaves" / enclave.lstrip("/")

    def environment(self) -> dict[str, str]:
        """:func:`security_environment` of this keystore."""
        return security_environment(self.directory)


def create_keystore(
    directory: Path,
    *,
    operators: Sequence[str] = (DEFAULT_OPERATOR,),
    observers: Sequence[str] = (DEFAULT_OBSERVER,),
    domain_id: int = 0,
    valid_days: int = DEFAULT_VALID_DAYS,
    common_name: str = "inertia_id CA",
) -> Keystore:
    """Create a keystore in ``directory`` (new or empty): a CA, the governance of ``domain_id``
    and the enclaves :data:`NODE_ENCLAVE` (role ``node``), :data:`SIMULATOR_ENCLAVE`
    (``simulator``), ``operators`` and ``observers``, each with a certificate, a key and signed
    permissions valid ``valid_days``. Keys are written readable by their owner only."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()):
        raise KeystoreError(f"{directory} exists and is not empty; give a new directory")
    roles = {NODE_ENCLAVE: "node", SIMULATOR_ENCLAVE: "simulator"}
    for names, role in ((operators, "operator"), (observers, "observer")):
        for name in names:
            if check_enclave_name(name) in roles:
                raise KeystoreError(f"enclave {name} is given twice (as {roles[name]} and {role})")
            roles[name] = role
    keystore = Keystore(directory, roles)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    # a day's margin against clocks that lag behind this one
    not_before, not_after = (
        now - datetime.timedelta(days=1),
        now + datetime.timedelta(days=valid_days),
    )

    ca_name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, common_name)])
    ca_key = ec.generate_private_key(ec.SECP256R1())  # DDS-Security 9.3.1: prime256v1
    ca_cert = _certificate(
        ca_name, ca_name, ca_key.public_key(), ca_key, not_before, not_after, ca=True
    )
    ca_pem = _cert_pem(ca_cert)
    _write(directory / "public" / "ca.cert.pem", ca_pem)
    _write(directory / "private" / "ca.key.pem", _key_pem(ca_key), private=True)
    governance = governance_xml(domain_id)
    signed_governance = sign_smime(ca_cert, ca_key, governance)
    _write(directory / "enclaves" / "governance.xml", governance)
    _write(directory / "enclaves" / "governance.p7s", signed_governance)

    for enclave, role in roles.items():
        folder = keystore.enclave_dir(enclave)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, enclave)])
        cert = _certificate(
            subject, ca_name, key.public_key(), ca_key, not_before, not_after, ca=False
        )
        permissions = permissions_xml(enclave, role_rules(role), domain_id, not_before, not_after)
        _write(folder / "cert.pem", _cert_pem(cert))
        _write(folder / "key.pem", _key_pem(key), private=True)
        _write(folder / "identity_ca.cert.pem", ca_pem)
        _write(folder / "permissions_ca.cert.pem", ca_pem)
        _write(folder / "governance.p7s", signed_governance)
        _write(folder / "permissions.xml", permissions)
        _write(folder / "permissions.p7s", sign_smime(ca_cert, ca_key, permissions))
    return keystore


@contextmanager
def temporary_keystore() -> Iterator[Keystore]:
    """A new keystore (:func:`create_keystore`, default enclaves) for :func:`ros_domain_id` in
    a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="inertia_id_keystore_") as directory:
        yield create_keystore(Path(directory) / "keystore", domain_id=ros_domain_id())


def sign_smime(cert, key, content: bytes) -> bytes:
    """``content`` S/MIME-signed (detached, text, SHA-256) by ``cert``/``key``: the ``.p7s``
    form DDS-Security reads governance and permissions in (OpenSSL ``PKCS7_verify``)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.serialization import pkcs7

    return (
        pkcs7.PKCS7SignatureBuilder()
        .set_data(content)
        .add_signer(cert, key, hashes.SHA256())
        .sign(
            serialization.Encoding.SMIME,
            [pkcs7.PKCS7Options.Text, pkcs7.PKCS7Options.DetachedSignature],
        )
    )


def _certificate(
    subject,
    issuer,
    public_key,
    signing_key,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    ca: bool,
):
    """An X.509 certificate of ``subject`` signed by ``signing_key`` (SHA-256)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=ca)
        .sign(signing_key, hashes.SHA256())
    )


def _cert_pem(cert) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, content: bytes, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if private:  # created owner-only, never readable by others even for a moment
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
    else:
        path.write_bytes(content)
