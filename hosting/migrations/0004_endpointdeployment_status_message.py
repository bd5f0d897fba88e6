from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('endpoints', '0003_endpoint_failed_attempts'),
    ]

    operations = [
        migrations.AddField(
            model_name='endpointdeployment',
            name='status_message',
            field=models.CharField(blank=True, default='', max_length=1024),
        ),
    ]
