"""Serving containers are placed on nodes like training instances; the endpoint's single hosting
node goes. A container row of an upgraded installation gets its endpoint's hosting node; one
whose node never registered is forgotten (the reaper removes its container, the count check
starts a replacement)."""
import django.db.models.deletion
from django.db import migrations, models


def place_on_hosting_node(apps, schema_editor):
    ServingContainer = apps.get_model('endpoints', 'ServingContainer')
    Node = apps.get_model('workers', 'Node')
    nodes = dict(Node.objects.values_list('name', 'pk'))
    for row in ServingContainer.objects.select_related('deployment__endpoint'):
        node_id = nodes.get(row.deployment.endpoint.hosting_node)
        if node_id is None:
            row.delete()
        else:
            ServingContainer.objects.filter(pk=row.pk).update(node_id=node_id)


class Migration(migrations.Migration):

    dependencies = [
        ('endpoints', '0003_endpoint_failed_attempts'),
        ('workers', '0004_node_address'),
    ]

    operations = [
        migrations.AddField(
            model_name='servingcontainer',
            name='node',
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE,
                related_name='serving_containers', to='workers.node',
            ),
        ),
        migrations.RunPython(place_on_hosting_node, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='servingcontainer',
            name='node',
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name='serving_containers', to='workers.node',
            ),
        ),
        migrations.RemoveField(
            model_name='endpoint',
            name='hosting_node',
        ),
    ]
