"""Each principal's IAM statements as template.yaml grants them, with the SAM policy templates expanded the way
SAM's translator expands them and the intrinsic functions resolved against given values.

Used by the static IAM test (values that look like a deployment) and by the local stack (the values moto gave
the resources it created), so both see the same policy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# SAM's policy templates the template uses, copied from aws-sam-translator 1.115.0,
# samtranslator/policy_templates_data/policy_templates.json ("Definition" of each). tests/infra compares this table
# with the translator's file in .venv-sam, so a SAM upgrade that changes one is noticed.
_TABLE_ARNS = [
    {"Fn::Sub": ["arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${tableName}",
                 {"tableName": {"Ref": "TableName"}}]},
    {"Fn::Sub": ["arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${tableName}/index/*",
                 {"tableName": {"Ref": "TableName"}}]},
]
SAM_POLICY_TEMPLATES: dict[str, dict[str, Any]] = {
    "DynamoDBCrudPolicy": {"Statement": [{
        "Action": ["dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:Query",
                   "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:DescribeTable",
                   "dynamodb:ConditionCheckItem"],
        "Effect": "Allow", "Resource": _TABLE_ARNS}]},
    "DynamoDBReadPolicy": {"Statement": [{
        "Action": ["dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchGetItem",
                   "dynamodb:DescribeTable"],
        "Effect": "Allow", "Resource": _TABLE_ARNS}]},
    "SNSPublishMessagePolicy": {"Statement": [{
        "Action": ["sns:Publish"], "Effect": "Allow",
        "Resource": {"Fn::Sub": ["arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:${topicName}",
                                 {"topicName": {"Ref": "TopicName"}}]}}]},
    "AWSSecretsManagerGetSecretValuePolicy": {"Statement": [{
        "Action": ["secretsmanager:GetSecretValue"], "Effect": "Allow",
        "Resource": {"Fn::Sub": ["${secretArn}", {"secretArn": {"Ref": "SecretArn"}}]}}]},
    "LambdaInvokePolicy": {"Statement": [{
        "Action": ["lambda:InvokeFunction"], "Effect": "Allow",
        "Resource": {"Fn::Sub": ["arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"
                                 "${functionName}*", {"functionName": {"Ref": "FunctionName"}}]}}]},
}

_SUB = re.compile(r"\$\{([^}!]+)\}")
_NO_VALUE = object()


@dataclass(frozen=True, slots=True)
class Statement:
    principal: str  # logical id of the function, role or state machine
    sid: str
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    condition: Mapping[str, Any] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"Effect": self.effect, "Action": list(self.actions), "Resource": list(self.resources)}
        if self.sid:
            out["Sid"] = self.sid
        if self.condition:
            out["Condition"] = dict(self.condition)
        return out


@dataclass(frozen=True, slots=True)
class Resolver:
    """Resolves Ref, Fn::GetAtt, Fn::Sub, Fn::If, Fn::Join (short and long forms) from `values`:
    `values["Table"]` for !Ref Table, `values["Table.Arn"]` for !GetAtt Table.Arn, `values["AWS::Region"]`, ...;
    `conditions` gives each condition's truth."""

    values: Mapping[str, str]
    conditions: Mapping[str, bool] = field(default_factory=dict)

    def __call__(self, node: Any, local: Mapping[str, Any] | None = None) -> Any:
        local = local or {}
        if isinstance(node, list):
            return [v for v in (self(x, local) for x in node) if v is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            fn = key.removeprefix("Fn::").removeprefix("!")
            if key.startswith(("Fn::", "!")) or key == "Ref":
                return self._intrinsic(fn, arg, local)
        return {k: v for k, v in ((k, self(v, local)) for k, v in node.items()) if v is not _NO_VALUE}

    def _intrinsic(self, fn: str, arg: Any, local: Mapping[str, Any]) -> Any:
        if fn == "Ref":
            if arg == "AWS::NoValue":
                return _NO_VALUE
            return local[arg] if arg in local else self._value(arg)
        if fn == "GetAtt":
            name = arg if isinstance(arg, str) else ".".join(arg)
            return self._value(name)
        if fn == "If":
            condition, yes, no = arg
            return self(yes if self.conditions[condition] else no, local)
        if fn == "Join":
            sep, items = arg
            return sep.join(str(x) for x in self(items, local))
        if fn == "Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            scope = {**local, **{k: self(v, local) for k, v in extra.items()}}
            return _SUB.sub(lambda m: str(scope[m.group(1)]) if m.group(1) in scope else self._value(m.group(1)),
                            text)
        raise ValueError(f"unsupported intrinsic function {fn!r}")

    def _value(self, name: str) -> str:
        if name not in self.values:
            raise KeyError(f"no value for {name!r} (add it to the resolver's values)")
        return self.values[name]


def principals(template: Mapping[str, Any]) -> list[str]:
    """Logical ids of everything that holds an IAM policy: roles, functions with their own policies, state
    machines."""
    out = []
    for logical_id, res in template["Resources"].items():
        kind, props = res["Type"], res.get("Properties", {})
        if kind == "AWS::IAM::Role" or (kind in ("AWS::Serverless::Function", "AWS::Serverless::StateMachine")
                                        and "Role" not in props):
            out.append(logical_id)
    return out


def role_of(template: Mapping[str, Any], logical_id: str) -> str:
    """The principal whose policy a function runs with: its `Role: !GetAtt X.Arn`, else itself."""
    role = template["Resources"][logical_id].get("Properties", {}).get("Role")
    if isinstance(role, dict):
        target: Any = role.get("!GetAtt", role.get("Fn::GetAtt", ""))
        name = target if isinstance(target, str) else ".".join(target)
        return name.split(".")[0]
    return logical_id


def statements(template: Mapping[str, Any], logical_id: str, resolve: Resolver) -> list[Statement]:
    """The identity-policy statements of a function (through its role), role or state machine."""
    principal = role_of(template, logical_id)
    props = template["Resources"][principal].get("Properties", {})
    docs: list[dict[str, Any]] = []
    if template["Resources"][principal]["Type"] == "AWS::IAM::Role":
        docs = [p["PolicyDocument"] for p in resolve(props.get("Policies", []))]
    else:
        for item in resolve(props.get("Policies", [])):
            docs.extend(_expand(item, resolve))
    return [_statement(principal, s) for d in docs for s in _as_list(d["Statement"])]


def _expand(item: Any, resolve: Resolver) -> Iterator[dict[str, Any]]:
    if isinstance(item, str):
        raise ValueError(f"managed policy {item!r} in Policies: list its statements instead, so they can be checked")
    if "Statement" in item:
        yield item
        return
    ((name, params),) = item.items()
    if name not in SAM_POLICY_TEMPLATES:
        raise ValueError(f"SAM policy template {name!r} is not in SAM_POLICY_TEMPLATES: copy its Definition there")
    yield resolve(SAM_POLICY_TEMPLATES[name], params)


def resource_policy_statements(template: Mapping[str, Any], resolve: Resolver) -> list[Statement]:
    """Statements of resource policies (queue policies): their Resource must fit their actions too."""
    out = []
    for logical_id, res in template["Resources"].items():
        if res["Type"] == "AWS::SQS::QueuePolicy":
            doc = resolve(res["Properties"]["PolicyDocument"])
            out += [_statement(logical_id, s) for s in _as_list(doc["Statement"])]
    return out


def _as_list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else [x]


def _statement(principal: str, s: Mapping[str, Any]) -> Statement:
    return Statement(principal=principal, sid=str(s.get("Sid", "")), effect=str(s["Effect"]),
                     actions=tuple(_as_list(s["Action"])), resources=tuple(_as_list(s.get("Resource", "*"))),
                     condition=s.get("Condition", {}))


def documents(stmts: list[Statement]) -> dict[str, Any]:
    """One policy document holding `stmts`."""
    return {"Version": "2012-10-17", "Statement": [s.document() for s in stmts]}
