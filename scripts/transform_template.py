"""Prints template.yaml as CloudFormation receives it after the SAM
transform (AWS::Serverless::* expanded into roles, policies, event source
mappings...), for the given parameter values (Name=Value ...). Offline:
managed policies are named by their AWS ARNs, CodeUri is a placeholder.
Used by make test to check each function's IAM as deployed."""
import json
import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicyLookup:
    """SAM's own managed policies are known by ARN; there are no others."""

    def load(self):
        return {}


os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(root, "template.yaml")) as file:
    template = yaml_parse(file.read())
for resource in template["Resources"].values():
    if resource["Type"] == "AWS::Serverless::Function":
        # The transform wants an S3 location; the code is not what is checked.
        resource["Properties"]["CodeUri"] = "s3://placeholder/code.zip"
parameters = dict(argument.split("=", 1) for argument in sys.argv[1:])
print(json.dumps(transform(template, parameters, NoManagedPolicyLookup()), indent=1, sort_keys=True))
